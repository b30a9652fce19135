/**
 * The bot's per-channel working-context cache. Each channel's context and calibration are kept in
 * memory and current incrementally as messages are appended; a context-changed notification marks a
 * channel stale, and its next read reloads it; the generation the store returns on every append
 * catches a missed notification (and a notification that arrived mid-turn), and reloads then.
 * However the cached context reached a newer generation (either reload, or a turn that took the
 * stored context after a cut), the compactor is told once, so it learns the passes that landed.
 *
 * Other replicas' appends bring no notification and no new generation: an append's seq past the
 * cached head + 1 (or a redelivery's head past it) shows the cache is behind by appends alone, since
 * every other write that changes the context bumps the generation. The cache then reads only what
 * came after its head (`TurnLog.loadAfter`) and appends it; a tail that does not continue the cached
 * context (another generation by then, or counts that do not add up) reloads the whole context.
 * `stats()` counts both: `deltaLoads` (tails read) and `reloads` (whole contexts read again).
 *
 * With a feed (`AppendFeed`, Redis pub/sub between replicas) the tail mostly need not be read: each
 * replica sends the messages it appended as its cache took them, and the others append them to
 * their cached copy when they continue it (`heard`; counted as `appendsHeard`), so the next turn
 * on any replica finds its copy current. A notice that does not continue a copy is ignored: the
 * seq check above still catches the copy up at its next append.
 *
 * The cache is bounded by memory, not by a count of channels: a quiet channel's context is a few
 * kilobytes, a busy one's up to the whole window. Each channel weighs its estimated bytes
 * (`estimatedBytes`), re-weighed as it grows, and the least recently used go past `[bot]
 * context_cache_mb`. A miss is one round trip (`TurnLog.loadChannel`).
 */
import { DEFAULT_CONTEXT_CACHE_MB } from '@ebb/config';
import {
  type AppendFeed,
  type AppendOptions,
  type AppendResult,
  type Calibration,
  type ContextDelta,
  type ContextMessage,
  contextEntryOf,
  LruMap,
  type NewMessage,
  type ToolCall,
  type TurnLog,
  toNewMessage,
  WorkingContext,
} from '@ebb/core';
import type { ContextCacheStats } from '@ebb/observability';
import { BotError } from '../errors.js';
import type { ChannelState, TurnChannel } from './turn.js';

/**
 * What a cached channel costs in memory, estimated from what the context holds without walking it:
 * a fixed part per channel, per message or span (the object, its author and time), and per token of
 * text (about four characters, at two bytes each when the text is not Latin-1). Measured on the
 * irc-ubuntu transcript: 480 bytes a message of 21 tokens, 650 in channels of five messages
 * (BENCHMARKS.md, "Many channels"); this estimate gives 570 and 800, so the budget errs on the safe side.
 */
const BYTES_PER_CHANNEL = 1_024;
const BYTES_PER_ENTRY = 400;
const BYTES_PER_TOKEN = 8;

export function estimatedBytes(context: WorkingContext): number {
  const { raw, spans, tokens } = context.view();
  return BYTES_PER_CHANNEL + BYTES_PER_ENTRY * (raw.length + spans.length) + BYTES_PER_TOKEN * tokens;
}

export type { ChannelState } from './turn.js';

/**
 * A message on its way into the archive: a user's, the bot's reply, or a step of the tool loop (the
 * bot's tool calls, then one result per call).
 */
export interface AppendedMessage {
  role: 'user' | 'assistant' | 'tool';
  author: string;
  text: string;
  ts: string;
  /**
   * The platform's id, unique per channel: a redelivery with the same id is not stored twice. Absent
   * for what was never posted (tool calls and their results); the unique index lets any number of
   * those through, and they are never redelivered.
   */
  platformMessageId?: string;
  /** The bot's message that calls tools. */
  toolCalls?: readonly ToolCall[];
  /** A tool result: the id of the call it answers. */
  toolCallId?: string;
  /** The bot's message: the memories recalled into the prompt it answered (`NewMessage.recalledMemories`). */
  recalledMemories?: readonly string[];
}

/**
 * The store took the message (under `seq`), but the cached context could not be brought up to date
 * after it (the reload another process's change called for failed): the turn cannot go on, and the
 * message must not be reported as not archived. The channel is loaded afresh on its next read.
 */
export class ContextReloadError extends BotError {
  readonly seq: number;

  constructor(seq: number, cause: unknown) {
    super(`message ${seq} is stored, but the channel's context could not be reloaded`, {
      code: 'context_unavailable',
      retryable: true,
      cause,
    });
    this.seq = seq;
  }
}

export interface ChannelStatesOptions {
  readonly channels: Pick<TurnLog, 'append' | 'appendAll' | 'loadChannel' | 'loadContext' | 'loadAfter'>;
  /**
   * The cached context of a channel moved to a newer generation (a splice, or a cut): passes may
   * have landed. Called once per move, in the channel's actor.
   */
  readonly contextChanged: (key: string, calibration: Calibration) => Promise<void>;
  /** The cache's budget in bytes, read at every load (a reloaded config applies); default `[bot] context_cache_mb`'s. */
  readonly budgetBytes?: () => number;
  /** Where this replica's appends are sent for the others' copies (none with one process). */
  readonly feed?: Pick<AppendFeed, 'publish'>;
}

const DEFAULT_BUDGET_BYTES = DEFAULT_CONTEXT_CACHE_MB * 2 ** 20;

export class ChannelStates {
  readonly #options: ChannelStatesOptions;
  /**
   * Working contexts of the channels seen most recently, weighed in estimated bytes; a forgotten one
   * is loaded again. The count bound only keeps the map's own bookkeeping finite.
   */
  readonly #states: LruMap<string, ChannelState>;
  #hits = 0;
  #misses = 0;
  #reloads = 0;
  #deltaLoads = 0;
  #appendsHeard = 0;

  constructor(options: ChannelStatesOptions) {
    this.#options = options;
    this.#states = new LruMap({ capacity: 2 ** 24, maxWeight: this.#budget() });
  }

  /** The channel's state: cached, or loaded from the store (again, when stale). */
  async get(key: string): Promise<ChannelState> {
    const cached = this.#states.get(key);
    if (!cached) {
      this.#misses += 1;
      const loaded = await this.#options.channels.loadChannel(key);
      const context = new WorkingContext(loaded.context);
      const state = {
        context,
        calibration: loaded.calibration,
        notified: context.generation,
        reported: context.generation,
      };
      this.#states.maxWeight = this.#budget();
      this.#states.set(key, state, estimatedBytes(context));
      return state;
    }
    this.#hits += 1;
    if (cached.context.generation < cached.notified) await this.#reload(key, cached);
    else await this.#report(key, cached);
    return cached;
  }

  /**
   * The channel's state as the store has it now: the cached one brought level in place (by the
   * appends after its head, or reloaded when stale or at another generation), or loaded. For a step
   * that must not judge on a copy another replica's appends left behind (appends bring no
   * notification); a turn's own `get` follows them through its append instead.
   */
  async current(key: string): Promise<ChannelState> {
    const cached = this.#states.get(key);
    if (!cached) return this.get(key);
    if (cached.context.generation < cached.notified) await this.#reload(key, cached);
    else await this.#catchUp(key, cached);
    return cached;
  }

  /** Hits, misses, reloads, tails read and evictions since the start, and what the cache holds now. */
  stats(): ContextCacheStats {
    return {
      hits: this.#hits,
      misses: this.#misses,
      reloads: this.#reloads,
      deltaLoads: this.#deltaLoads,
      appendsHeard: this.#appendsHeard,
      evictions: this.#states.evictions,
      channels: this.#states.size,
      bytes: this.#states.weight,
      budgetBytes: this.#states.maxWeight,
    };
  }

  /**
   * A context change at `generation` was notified: a cached context older than that is marked
   * stale. True when the channel has news for its monitor: its context is stale, or already holds
   * the change without the compactor having been told.
   */
  markStale(key: string, generation: number): boolean {
    const state = this.#states.get(key);
    if (!state) return false;
    state.notified = Math.max(state.notified, generation);
    return state.context.generation < generation || state.reported < generation;
  }

  /**
   * Another replica's appends (`AppendFeed`): a cached copy they continue (the same generation, the
   * first seq its head + 1, the tokens adding up) takes them; any other notice changes nothing.
   */
  heard(key: string, appended: ContextDelta): void {
    // Not a use of the channel here: another replica's traffic must not keep a channel this one does
    // not serve in its cache, ahead of those it does.
    const state = this.#states.peek(key);
    if (!state || state.context.generation < state.notified) return;
    const entries = continuation(state.context, appended);
    if (!entries?.length) return;
    for (const entry of entries) state.context.append(entry);
    this.#appendsHeard += 1;
    this.#states.reweigh(key, estimatedBytes(state.context));
  }

  /** Drops the channel's cache (after a failure), so its next turn reloads. */
  forget(key: string): void {
    this.#states.delete(key);
  }

  /**
   * Appends a message to the store and to the cached context: its seq, and whether it is new (a
   * redelivery gives the seq it was stored under). NUL characters, which Postgres cannot store in
   * text, are dropped. `ContextReloadError` when the message is stored but the context could not
   * follow it.
   */
  async append(turn: TurnChannel, message: AppendedMessage): Promise<{ seq: number; inserted: boolean }> {
    const { key, state } = turn;
    const appended = measured(message, turn);
    const result = await this.#options.channels.append(key, appended, fenceOf(turn));
    if (!result.inserted) {
      // A redelivery: answered from a context at least as new as the store's (another replica may
      // have archived it and more, or a take-back changed the channel since this cache was read).
      if (result.generation !== state.context.generation || result.headSeq > state.context.headSeq) {
        try {
          if (result.generation === state.context.generation) await this.#catchUp(key, state);
          else await this.#reload(key, state);
        } catch (err) {
          this.forget(key);
          throw new ContextReloadError(result.seq, err);
        }
      }
      return { seq: result.seq, inserted: false };
    }
    try {
      await this.#follow(key, state, [appended], [result]);
    } catch (err) {
      this.forget(key);
      throw new ContextReloadError(result.seq, err);
    }
    return { seq: result.seq, inserted: true };
  }

  /**
   * Appends a step of the tool loop (the call, then its results) in one write, so no message of
   * another replica lands between a call and its results; the seqs they were stored under.
   */
  async appendAll(turn: TurnChannel, group: readonly AppendedMessage[]): Promise<number[]> {
    const appended = group.map((message) => measured(message, turn));
    const results = await this.#options.channels.appendAll(turn.key, appended, fenceOf(turn));
    await this.#follow(turn.key, turn.state, appended, results);
    return results.map((result) => result.seq);
  }

  /**
   * The cached context after appends: extended by them; caught up when another writer appended
   * before them; reloaded when another process changed the channel.
   */
  async #follow(
    key: string,
    state: ChannelState,
    appended: readonly NewMessage[],
    results: readonly AppendResult[],
  ): Promise<void> {
    if (results.some((result) => result.generation !== state.context.generation)) {
      await this.#reload(key, state);
      return;
    }
    if (results.some((result, i) => result.seq !== state.context.headSeq + 1 + i)) {
      await this.#catchUp(key, state);
      return;
    }
    const entries = appended.map((message, i) => contextEntryOf(message, results[i]?.seq ?? 0));
    for (const entry of entries) state.context.append(entry);
    this.#reweigh(key, state);
    const last = results.at(-1);
    if (last !== undefined)
      this.#options.feed?.publish(key, {
        generation: last.generation,
        headSeq: last.seq,
        tokens: last.contextTokens,
        raw: entries,
      });
  }

  /**
   * Brings the cached context level with the store's by what was appended after its head (in place),
   * or reloads it when that tail does not continue it.
   */
  async #catchUp(key: string, state: ChannelState): Promise<void> {
    this.#deltaLoads += 1;
    const delta = await this.#options.channels.loadAfter(key, state.context.headSeq);
    const entries = continuation(state.context, delta);
    if (entries === undefined) {
      await this.#reload(key, state);
      return;
    }
    for (const entry of entries) state.context.append(entry);
    this.#reweigh(key, state);
    await this.#report(key, state);
  }

  /**
   * Loads the stored context into the cache (in place: the turn holding `state` sees it), and tells
   * the compactor when it moved.
   */
  async #reload(key: string, state: ChannelState): Promise<void> {
    this.#reloads += 1;
    state.context = new WorkingContext(await this.#options.channels.loadContext(key));
    this.#reweigh(key, state);
    await this.#report(key, state);
  }

  /** The channel's weight after its context changed, if it is still the one cached under `key`. */
  #reweigh(key: string, state: ChannelState): void {
    if (this.#states.get(key) === state) this.#states.set(key, state, estimatedBytes(state.context));
  }

  #budget(): number {
    return this.#options.budgetBytes?.() ?? DEFAULT_BUDGET_BYTES;
  }

  /** Tells the compactor once that the cached context moved to a newer generation. */
  async #report(key: string, state: ChannelState): Promise<void> {
    if (state.context.generation <= state.reported) return;
    state.reported = state.context.generation;
    await this.#options.contextChanged(key, state.calibration);
  }
}

/**
 * The raw messages that bring `context` level with the store's, as `delta` (a tail read after its
 * head, or appends heard) shows it, or undefined when they cannot: the store is at another
 * generation, or the messages past the head do not run from the head + 1 to the delta's head, or
 * the tokens do not add up. None when the context holds them already: appends heard while the tail
 * was being read took it that far.
 */
function continuation(context: WorkingContext, delta: ContextDelta): readonly ContextMessage[] | undefined {
  const { generation, headSeq, tokens } = context;
  if (delta.generation !== generation) return undefined;
  if (delta.headSeq <= headSeq) return [];
  const tail = delta.raw.filter((m) => m.seq > headSeq);
  if (tail.length !== delta.headSeq - headSeq || tail.some((m, i) => m.seq !== headSeq + 1 + i))
    return undefined;
  return tail.reduce((n, m) => n + m.tokens, tokens) === delta.tokens ? tail : undefined;
}

/** The store's options for the turn's appends: under its lease's fence, when it holds one. */
function fenceOf(turn: TurnChannel): AppendOptions {
  return turn.fence === undefined ? {} : { fence: turn.fence };
}

/** The message as the store takes it: the archive keeps the whole text, the context may hold a clipped copy. */
function measured(message: AppendedMessage, { tokenizer, settings }: TurnChannel): NewMessage {
  const { recalledMemories, ...rest } = message;
  const made = toNewMessage(
    { ...rest, author: withoutNul(message.author), text: withoutNul(message.text) },
    tokenizer,
    settings.compaction.messageMaxTokens,
  );
  return recalledMemories?.length ? { ...made, recalledMemories } : made;
}

function withoutNul(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '') : text;
}
