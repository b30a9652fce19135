/**
 * Messages the archive could not take: kept in the inbound spool (the channel is told once per
 * outage), and replayed into the archive in order, before the channel's next turn and on a timer
 * that also finds spools this process did not write (another replica's, or a previous process's).
 */
import { type EbbConfig, resolveChannel } from '@ebb/config';
import type {
  InboundSpool,
  Logger,
  Platform,
  PlatformAdapter,
  SpoolEntry,
  SpooledMessage,
  TurnResult,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import type { BotCompaction } from './bot-compaction.js';
import type { ChannelActors } from './channel-actors.js';
import type { ChannelStates } from './channel-states.js';

/** Said once per channel when the archive is away and messages are spooled, not once per message. */
export const CATCH_UP_NOTICE =
  "I can't reach my memory right now. I'm keeping what's said here and will catch up once it's back.";
const SPOOL_REPLAY_MS = 2_000;
const SPOOL_BATCH = 100;

export interface SpoolReplayOptions {
  readonly spool: InboundSpool;
  /** How often channels with spooled messages are replayed into the archive (default 2 s). */
  readonly intervalMs?: number;
  readonly config: () => EbbConfig;
  readonly logger: Logger;
  readonly actors: ChannelActors;
  readonly states: ChannelStates;
  readonly compaction: BotCompaction;
  /** The running adapter of a platform (it posts the catch-up notice). */
  readonly adapter: (platform: Platform) => PlatformAdapter;
}

export class SpoolReplay {
  readonly #options: SpoolReplayOptions;
  /** Channels told `CATCH_UP_NOTICE` during the current outage (forgotten once caught up). */
  readonly #noticed = new Set<string>();
  /**
   * Channels that may have spooled messages: the ones this process spooled to, and the ones the
   * replay timer found in the spool (another replica's, or a previous process's). A turn reads the
   * spool only for these, so a healthy turn does no spool I/O.
   */
  readonly #spooled = new Set<string>();
  #replayTimer: NodeJS.Timeout | undefined;
  #replaying = false;

  constructor(options: SpoolReplayOptions) {
    this.#options = options;
  }

  /** Spooled messages (this process's or a previous one's) are replayed as soon as the store answers. */
  start(): void {
    this.#replayTimer = setInterval(
      () => void this.#replayAll(),
      this.#options.intervalMs ?? SPOOL_REPLAY_MS,
    );
    this.#replayTimer.unref();
  }

  stop(): void {
    clearInterval(this.#replayTimer);
  }

  /**
   * Keeps a message the archive could not take in the spool, and tells the channel once per outage.
   * Undefined when the spool cannot take it either (Redis down too).
   */
  async keep(message: SpooledMessage, platform: Platform): Promise<TurnResult | undefined> {
    try {
      await this.#options.spool.push(message);
    } catch (err) {
      this.#options.logger.error({ err, channel: message.channelKey }, 'could not spool a message either');
      return undefined;
    }
    this.#spooled.add(message.channelKey);
    if (!this.#noticed.has(message.channelKey) && message.role === 'user') {
      this.#noticed.add(message.channelKey);
      await this.#options
        .adapter(platform)
        .send(message.channelKey, CATCH_UP_NOTICE)
        .catch(() => {});
    }
    return { reply: null, archived: 'spooled' };
  }

  /** Keeps a reply that is already posted but not archived, without telling the channel; false when refused. */
  async keepReply(reply: SpooledMessage): Promise<boolean> {
    try {
      await this.#options.spool.push(reply);
    } catch {
      return false;
    }
    this.#spooled.add(reply.channelKey);
    return true;
  }

  /**
   * Replays the channel's spooled messages into the archive, oldest first (a message archived before
   * is skipped on its platform id). True when nothing is left; false when the archive is still away.
   * Runs in the channel's actor.
   */
  async catchUp(key: string): Promise<boolean> {
    const { spool, states, logger } = this.#options;
    if (!this.#spooled.has(key)) return true;
    let batch: readonly SpoolEntry[];
    try {
      batch = await spool.peek(key, SPOOL_BATCH);
    } catch {
      return true; // Redis is away: nothing can be read back, so nothing holds this turn back
    }
    if (batch.length === 0) {
      this.#spooled.delete(key);
      return true;
    }
    let replayed = 0;
    try {
      const settings = resolveChannel(this.#options.config(), key);
      const tokenizer = await loadTokenizer(settings.llm.encoding);
      const state = await states.get(key);
      while (batch.length > 0) {
        for (const { message } of batch) await states.append(key, state, tokenizer, settings, message);
        await spool.remove(
          key,
          batch.map((e) => e.id),
        );
        replayed += batch.length;
        batch = await spool.peek(key, SPOOL_BATCH);
      }
      await this.#options.compaction.monitor(key, state, settings, tokenizer);
    } catch (err) {
      states.forget(key);
      if (replayed > 0) logger.warn({ err, channel: key, replayed }, 'spool replay stopped');
      return false;
    }
    this.#spooled.delete(key);
    this.#noticed.delete(key);
    logger.info(
      { event: 'spool.replayed', channel: key, messages: replayed },
      `archived ${replayed} spooled messages of ${key}`,
    );
    return true;
  }

  /** Every channel with spooled messages, each in its actor; one round at a time. */
  async #replayAll(): Promise<void> {
    if (this.#replaying) return;
    this.#replaying = true;
    try {
      const keys = await this.#options.spool.channels().catch(() => []);
      for (const key of keys) this.#spooled.add(key);
      await Promise.all(keys.map((key) => this.#options.actors.run(key, () => this.catchUp(key))));
    } finally {
      this.#replaying = false;
    }
  }
}
