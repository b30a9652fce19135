/**
 * The bot's per-channel working-context cache. Each channel's context and calibration are kept in
 * memory and current incrementally as messages are appended; a context-changed notification marks a
 * channel stale, and its next read reloads it (telling the caller what changed); the generation the
 * store returns on every append catches a missed notification.
 */
import type { ResolvedChannelConfig } from '@ebb/config';
import {
  type AppendResult,
  type Calibration,
  type ChannelStore,
  contextEntryOf,
  LruMap,
  type NewMessage,
  type Tokenizer,
  type ToolCall,
  toNewMessage,
  UNCALIBRATED,
  WorkingContext,
} from '@ebb/core';

/** Cached working contexts kept in memory; the least recently used channel is reloaded when needed. */
const MAX_CACHED_CHANNELS = 2_000;

export interface ChannelState {
  context: WorkingContext;
  calibration: Calibration;
  stale: boolean;
}

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
}

export interface ChannelStatesOptions {
  readonly channels: ChannelStore;
  /** A stale channel was reloaded: `before` is the cached context, `after` the reloaded one. */
  readonly contextChanged: (
    key: string,
    before: WorkingContext,
    after: WorkingContext,
    calibration: Calibration,
  ) => Promise<void>;
}

export class ChannelStates {
  readonly #options: ChannelStatesOptions;
  /** Working contexts of the channels seen most recently; a forgotten one is loaded again. */
  readonly #states = new LruMap<string, ChannelState>(MAX_CACHED_CHANNELS);

  constructor(options: ChannelStatesOptions) {
    this.#options = options;
  }

  /** The channel's state: cached, or loaded from the store (again, when stale). */
  async get(key: string): Promise<ChannelState> {
    let state = this.#states.get(key);
    if (!state || state.stale) {
      const context = new WorkingContext(await this.#options.channels.loadContext(key));
      const calibration =
        state?.calibration ?? (await this.#options.channels.calibration(key).catch(() => UNCALIBRATED));
      if (state?.stale) await this.#options.contextChanged(key, state.context, context, calibration);
      state = { context, calibration, stale: false };
      this.#states.set(key, state);
    }
    return state;
  }

  /**
   * A context change at `generation` was notified: a cached context older than that is marked stale.
   * True when one was.
   */
  markStale(key: string, generation: number): boolean {
    const state = this.#states.get(key);
    if (!state || state.context.generation >= generation) return false;
    state.stale = true;
    return true;
  }

  /** Drops the channel's cache (after a failure), so its next turn reloads. */
  forget(key: string): void {
    this.#states.delete(key);
  }

  /**
   * Appends a message to the store and to the cached context: its seq, and whether it is new (a
   * redelivery gives the seq it was stored under). NUL characters, which Postgres cannot store in
   * text, are dropped.
   */
  async append(
    key: string,
    state: ChannelState,
    tokenizer: Tokenizer,
    settings: ResolvedChannelConfig,
    message: AppendedMessage,
  ): Promise<{ seq: number; inserted: boolean }> {
    const appended = measured(message, tokenizer, settings);
    const result = await this.#options.channels.append(key, appended);
    if (!result.inserted) return { seq: result.seq, inserted: false };
    await this.#follow(key, state, [appended], [result]);
    return { seq: result.seq, inserted: true };
  }

  /**
   * Appends a step of the tool loop (the call, then its results) in one write, so no message of
   * another replica lands between a call and its results.
   */
  async appendAll(
    key: string,
    state: ChannelState,
    tokenizer: Tokenizer,
    settings: ResolvedChannelConfig,
    group: readonly AppendedMessage[],
  ): Promise<void> {
    const appended = group.map((message) => measured(message, tokenizer, settings));
    const results = await this.#options.channels.appendAll(key, appended);
    await this.#follow(key, state, appended, results);
  }

  /** The cached context after appends: extended, or reloaded when another process changed the channel. */
  async #follow(
    key: string,
    state: ChannelState,
    appended: readonly NewMessage[],
    results: readonly AppendResult[],
  ): Promise<void> {
    const moved = results.some(
      (result, i) =>
        result.generation !== state.context.generation || result.seq !== state.context.headSeq + 1 + i,
    );
    if (moved) {
      state.context = new WorkingContext(await this.#options.channels.loadContext(key));
      return;
    }
    appended.forEach((message, i) => {
      state.context.append(contextEntryOf(message, results[i]?.seq ?? 0));
    });
  }
}

/** The message as the store takes it: the archive keeps the whole text, the context may hold a clipped copy. */
function measured(
  message: AppendedMessage,
  tokenizer: Tokenizer,
  settings: ResolvedChannelConfig,
): NewMessage {
  return toNewMessage(
    { ...message, author: withoutNul(message.author), text: withoutNul(message.text) },
    tokenizer,
    settings.compaction.messageMaxTokens,
  );
}

function withoutNul(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '') : text;
}
