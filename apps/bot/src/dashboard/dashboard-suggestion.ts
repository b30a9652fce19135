/**
 * The dashboard's suggestion for a channel (`GET /api/dashboard/channels/:key/suggestion`): what
 * `ebb simulate --from-archive KEY --suggest` computes, on the running bot's own stores and config:
 * the channel's last `DASHBOARD_LIMITS.suggestionMessages` messages read through `readArchive` in
 * pages, passes as long as the 90th percentile of its last recorded ones (`RunStore.recent`).
 *
 * The search replays every candidate side by side on the bot's event loop, a page of messages
 * between two awaits, so it is kept cheap and rare: small pages (the loop is never held longer than
 * one page of ~50 candidates takes), one computation at a time in the process, the answer cached per
 * channel for `suggestionTtlMs` (a bounded map), concurrent requests for one channel sharing it. A
 * "too little history" answer is served from the cache only while the channel's head seq (the one
 * `channelSummary` query every request makes) is still below the messages it needs.
 */
import { type EbbConfig, resolveChannel } from '@ebb/config';
import {
  type ArchiveReader,
  type ChannelDirectory,
  LruMap,
  RUNS_LOOKBACK,
  type RunStore,
  type TranscriptMessage,
} from '@ebb/core';
import { isoMessageTime, passDurationsOf } from '@ebb/db';
import { DASHBOARD_LIMITS, type DashboardSuggestion } from '@ebb/web';
import { configText, passSecondsOf, suggestChannel } from '../commands/simulate-archive.js';

export interface SuggestionStores {
  readonly config: () => EbbConfig;
  readonly channels: Pick<ChannelDirectory, 'channelSummary'> & Pick<ArchiveReader, 'readArchive'>;
  readonly runs: Pick<RunStore, 'recent'>;
  readonly now?: () => number;
}

/** Messages per `readArchive` page: a page is replayed by every candidate before the next await. */
const PAGE = 200;
/** Channels whose suggestion is kept. */
const CACHED_CHANNELS = 64;

export class ChannelSuggestions {
  readonly #stores: SuggestionStores;
  readonly #now: () => number;
  readonly #cache = new LruMap<
    string,
    { readonly at: number; readonly answer: Promise<DashboardSuggestion> }
  >(CACHED_CHANNELS);
  /** The computation running now: the next one waits for it. */
  #running: Promise<unknown> = Promise.resolve();

  constructor(stores: SuggestionStores) {
    this.#stores = stores;
    this.#now = stores.now ?? Date.now;
  }

  /** The channel's suggestion, or undefined for a channel the store does not know. */
  async suggestion(key: string): Promise<DashboardSuggestion | undefined> {
    const summary = await this.#stores.channels.channelSummary(key);
    if (summary === undefined) return undefined;
    for (;;) {
      const cached = this.#cache.get(key);
      if (cached === undefined || this.#now() - cached.at >= DASHBOARD_LIMITS.suggestionTtlMs) break;
      const answer = await cached.answer;
      if (stillHolds(answer, summary.headSeq)) return answer;
      // Another request may have started the new computation while this one waited: share it.
      if (this.#cache.get(key) === cached) break;
    }
    const answer = this.#running.then(() => this.#compute(key, summary.headSeq));
    this.#running = answer.catch(() => undefined);
    this.#cache.set(key, { at: this.#now(), answer });
    // A failure is not kept: the next request tries again.
    answer.catch(() => this.#cache.delete(key));
    return answer;
  }

  async #compute(key: string, headSeq: number): Promise<DashboardSuggestion> {
    const computedAt = new Date(this.#now()).toISOString();
    if (headSeq === 0) return { key, computedAt, status: 'no_history' };
    const config = this.#stores.config();
    const text = await configText(config);
    const fromSeq = Math.max(1, headSeq - DASHBOARD_LIMITS.suggestionMessages + 1);
    const passSeconds = passSecondsOf(
      passDurationsOf(await this.#stores.runs.recent(key, RUNS_LOOKBACK)),
      undefined,
    );
    const channels = this.#stores.channels;
    async function* source(): AsyncGenerator<TranscriptMessage> {
      for (let from = fromSeq; from <= headSeq; from += PAGE) {
        const page = await channels.readArchive(key, from, Math.min(headSeq, from + PAGE - 1));
        for (const { seq: _seq, tokens: _tokens, stub: _stub, ts, ...message } of page) {
          const iso = ts === undefined ? undefined : isoMessageTime(ts);
          yield iso === undefined ? message : { ...message, ts: iso };
        }
      }
    }
    const report = await suggestChannel({
      key,
      channel: resolveChannel(config, key),
      text,
      messages: headSeq - fromSeq + 1,
      passSeconds,
      source,
    });
    switch (report.status) {
      case 'too_little_history':
        return {
          key,
          computedAt,
          status: report.status,
          messages: report.messages,
          neededMessages: report.neededMessages,
        };
      case 'suggested': {
        const s = report.suggestion;
        if (s === undefined) throw new Error(`no suggestion for ${key}`);
        return {
          key,
          computedAt,
          status: 'suggested',
          messages: report.messages,
          passSeconds: report.passSeconds,
          current: s.current,
          suggested: s.suggested,
          closest: s.closest,
          whatWould: s.whatWould,
          block: s.block,
          search: s.search,
        };
      }
      default:
        throw new Error(`cannot suggest for ${key}: ${report.status}`);
    }
  }
}

/**
 * Whether a cached answer still says what a new computation would, at the channel's head seq: "too
 * little history" (or none) only while the messages a replay would read are fewer than it needs; a
 * channel that has grown past that is replayed again at once rather than told so for the rest of
 * the cache's 10 minutes. A suggestion holds until the cache lets it go.
 */
function stillHolds(answer: DashboardSuggestion, headSeq: number): boolean {
  const messages = Math.min(headSeq, DASHBOARD_LIMITS.suggestionMessages);
  switch (answer.status) {
    case 'no_history':
      return messages === 0;
    case 'too_little_history':
      return messages < answer.neededMessages;
    case 'suggested':
      return true;
  }
}
