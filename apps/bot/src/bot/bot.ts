/**
 * The bot: one turn per inbound message, in the channel's actor.
 *
 *   append (idempotent on the platform id) → answer? (respond_to, DMs, never bots) → recall memories
 *   → render the prompt → model (with a typing indicator) → post → append the reply → monitor
 *
 * Each channel's working context is cached in memory and kept current incrementally; a splice by a
 * worker arrives as a context-changed notification and marks the cache stale, and the generation
 * the store returns on every append catches a missed notification. The monitor never waits for a
 * pass; an emergency truncates at once; a provider context overflow truncates and retries.
 */
import { type EbbConfig, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import {
  type Calibration,
  ChannelCompactor,
  type ChannelStore,
  type ChatModel,
  type CommandInvocation,
  type CompactionEventSink,
  type CompactionQueue,
  type CompactorSettings,
  type ContextNotifier,
  calibrate,
  chatMessageTokens,
  focusProblem,
  type InboundMessage,
  type InboundSpool,
  type Logger,
  LruMap,
  type Memory,
  type MemoryStore,
  measureMessage,
  memoryScope,
  type Platform,
  type PlatformAdapter,
  type PlatformHandlers,
  platformOf,
  type RunStore,
  renderContext,
  renderMemories,
  type SpoolEntry,
  type SpooledMessage,
  systemPromptTokens,
  type Tokenizer,
  TRUNCATION_MARKER,
  type TurnResult,
  UNCALIBRATED,
  WorkingContext,
} from '@ebb/core';
import { isLlmError, loadTokenizer } from '@ebb/llm';
import { compactorSettingsOf } from '../channel-status.js';
import { BotError } from '../errors.js';
import { ChannelActors } from './channel-actors.js';
import { contextReport } from './context-report.js';
import { PlatformConnections, type PlatformStartPolicy } from './platform-connections.js';

export interface BotOptions {
  readonly config: () => EbbConfig;
  readonly channels: ChannelStore;
  readonly memories: MemoryStore;
  readonly runs: RunStore;
  readonly queue: CompactionQueue;
  readonly notifier: ContextNotifier;
  /** The model that answers in a channel (channels may use different models). */
  readonly chatModel: (channelKey: string) => ChatModel;
  readonly logger: Logger;
  readonly botName?: string;
  /** Compaction events, for logs and the web channel's stream. */
  readonly onEvent?: CompactionEventSink;
  /**
   * Where chat messages wait while the archive is away (Slack and Discord do not redeliver). Without
   * it such a message gets an apology and is not kept.
   */
  readonly spool?: InboundSpool;
  /** How often channels with spooled messages are replayed into the archive (default 2 s). */
  readonly spoolReplayMs?: number;
  /** After every turn: for metrics. */
  readonly onTurn?: (turn: {
    platform: Platform;
    answered: boolean;
    usage: number;
    durationMs: number;
  }) => void;
}

/** Provider overflows in a row that the bot answers by truncating again before it gives up. */
const MAX_OVERFLOW_RETRIES = 2;
const RECALL_CANDIDATES = 20;
/** Cached working contexts kept in memory; the least recently used channel is reloaded when needed. */
const MAX_CACHED_CHANNELS = 2_000;
/** Calibration is kept in memory and saved to the channel row every this many replies. */
const CALIBRATION_SAVE_EVERY = 10;
/** Said once per channel when the archive is away and messages are spooled, not once per message. */
export const CATCH_UP_NOTICE =
  "I can't reach my memory right now. I'm keeping what's said here and will catch up once it's back.";
const SPOOL_REPLAY_MS = 2_000;
const SPOOL_BATCH = 100;
export const APOLOGY =
  "Sorry, I can't reach my memory right now, so I can't answer. Please try again in a minute.";
export const MODEL_APOLOGY =
  "Sorry, the model I use isn't answering right now. Please try again in a minute.";

interface ChannelState {
  context: WorkingContext;
  calibration: Calibration;
  stale: boolean;
}

export class Bot {
  readonly #options: BotOptions;
  readonly #actors = new ChannelActors();
  /** Working contexts of the channels seen most recently; a forgotten one is loaded again. */
  readonly #states = new LruMap<string, ChannelState>(MAX_CACHED_CHANNELS);
  readonly #adapters = new Map<Platform, PlatformAdapter>();
  readonly #connections: PlatformConnections;
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
  readonly #promptTokenCache = new LruMap<string, number>(64);
  #compactor: ChannelCompactor | undefined;
  readonly #botName: string;
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(options: BotOptions) {
    this.#options = options;
    this.#botName = options.botName ?? 'ebb';
    this.#connections = new PlatformConnections(options.logger);
  }

  /** Platforms that could not connect yet, with their last error. */
  degradedPlatforms(): Record<string, string> {
    return this.#connections.degraded();
  }

  /**
   * Starts the adapters and listens for context changes. With `policy`, a platform whose start fails
   * in a way time can mend runs degraded and is retried in the background (`PlatformConnections`).
   */
  async start(adapters: readonly PlatformAdapter[], policy?: PlatformStartPolicy): Promise<void> {
    const options = this.#options;
    this.#compactor = new ChannelCompactor({
      channels: options.channels,
      runs: options.runs,
      queue: options.queue,
      // The marker's tokens under o200k; other encodings differ by a token or two.
      markerTokens: chatMessageTokens(await loadTokenizer('o200k_base'), TRUNCATION_MARKER),
      ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
    });
    this.#unsubscribe = await this.#options.notifier.subscribe((change) => {
      const state = this.#states.get(change.channelKey);
      if (!state || state.context.generation >= change.generation) return;
      state.stale = true;
      // A pass landed: decide again now, in the channel's actor, rather than on the next message,
      // so a quiet channel still gets the heal or the next pass it needs.
      void this.#actors.run(change.channelKey, () => this.#recheck(change.channelKey));
    });
    if (options.spool) {
      // Spooled messages (this process's or a previous one's) are replayed as soon as the store answers.
      this.#replayTimer = setInterval(() => void this.#replayAll(), options.spoolReplayMs ?? SPOOL_REPLAY_MS);
      this.#replayTimer.unref();
    }
    const handlers = this.handlers();
    for (const adapter of adapters) {
      this.#adapters.set(adapter.platform, adapter);
      try {
        await this.#connections.start(adapter, handlers, policy);
      } catch (err) {
        // One platform failed to start: stop the ones that did, so nothing is left listening.
        await this.stop();
        throw err;
      }
    }
  }

  /**
   * Stops in the order that loses nothing: the adapters take no new messages, the turns already
   * taken finish and answer through adapters that can still send (up to `drainMs`), then the
   * adapters disconnect and the bot stops listening for context changes. Stores are closed by the
   * caller after.
   */
  async stop(drainMs = 10_000): Promise<void> {
    const log = this.#options.logger;
    const started = performance.now();
    clearInterval(this.#replayTimer);
    for (const adapter of this.#adapters.values()) await adapter.pause?.().catch(() => {});
    const busy = this.#actors.busy;
    const drained = await this.#actors.drain(drainMs);
    if (drained === 'timed_out') {
      log.warn({ busy: this.#actors.busy, graceMs: drainMs }, 'stopped with turns still running');
    } else if (busy > 0) {
      log.info({ channels: busy, ms: Math.round(performance.now() - started) }, 'finished the turns in hand');
    }
    await this.#connections.stop();
    for (const adapter of this.#adapters.values()) await adapter.stop().catch(() => {});
    await this.#unsubscribe?.();
  }

  handlers(): PlatformHandlers {
    return {
      onMessage: (message) => this.#actors.run(message.channelKey, () => this.#turn(message)),
      onCommand: (command) => this.#actors.run(command.channelKey, () => this.#command(command)),
    };
  }

  async #turn(message: InboundMessage): Promise<TurnResult> {
    const key = message.channelKey;
    const log = this.#options.logger.child({ channel: key });
    const started = performance.now();
    let stored = false;
    const incoming: SpooledMessage = {
      channelKey: key,
      role: 'user',
      author: message.authorName,
      text: message.text,
      ts: message.ts,
      platformMessageId: message.platformMessageId,
    };
    // Messages spooled before this one go into the archive first, so the order is kept.
    if (!message.reportsFailure && !(await this.#catchUp(key))) {
      const spooled = await this.#spool(incoming, message.platform);
      if (spooled) return spooled;
    }
    try {
      const settings = resolveChannel(this.#options.config(), key);
      const tokenizer = await loadTokenizer(settings.llm.encoding);
      const state = await this.#state(key);
      const appended = await this.#append(key, state, tokenizer, settings, incoming);
      if (!appended.inserted) {
        const original = await this.#original(key, appended.seq);
        return { reply: null, archived: 'duplicate', ...(original ? { original } : {}) };
      }
      stored = true;
      log.debug({ seq: appended.seq, text: message.text }, 'message');

      const answer =
        !message.fromBot && (message.direct || settings.bot.respondTo === 'all' || message.mentionsBot);
      let reply: string | null = null;
      let modelFailed = false;
      if (answer) {
        // A message that pushed the context past the emergency threshold is cut before the model
        // sees it, rather than sending a prompt the provider would refuse.
        const compactorSettings = this.#compactorSettings(settings, tokenizer);
        const usage = this.#compaction.usage(state.context.view(), compactorSettings, state.calibration);
        if (usage >= settings.compaction.emergencyThreshold)
          await this.#monitor(key, state, settings, tokenizer);
        let text: string | undefined;
        try {
          text = await this.#reply(key, state, tokenizer, settings, message.text);
        } catch (err) {
          // The model failed for good (retries done): say so, and keep the turn going. A sender
          // told of failures (the web API) gets that in the answer's code, not as a reply.
          log.error({ err }, 'model call failed');
          if (message.reportsFailure) modelFailed = true;
          else text = MODEL_APOLOGY;
        }
        if (text !== undefined) {
          reply = text;
          const sent = await this.#adapter(message.platform).send(key, text);
          // The reply is posted: from here on, a failure must not add an apology after it. The
          // archive append is retried once; if the store is still down the reply stays unarchived
          // (logged), and the cache is dropped so the next turn reloads.
          const assistant = {
            role: 'assistant' as const,
            author: this.#botName,
            text,
            ts: new Date().toISOString(),
            platformMessageId: sent.platformMessageId,
          };
          const kept = await this.#archiveReply(key, state, tokenizer, settings, assistant, log);
          if (kept === 'lost') return { reply, archived: 'stored', failedAfterStore: true };
          // Kept for the archive; the store is away, so the monitor waits for the next turn.
          if (kept === 'spooled') return { reply, archived: 'stored' };
        }
      }
      const usage = await this.#monitor(key, state, settings, tokenizer);
      this.#options.onTurn?.({
        platform: message.platform,
        answered: reply !== null,
        usage,
        durationMs: performance.now() - started,
      });
      return { reply, archived: 'stored', ...(modelFailed ? { failedAfterStore: true } : {}) };
    } catch (err) {
      // Postgres down (or any failure): never a crash; the next turn reloads. A sender that is told
      // of the failure (the web API) sends the message again; a chat gets a short apology.
      this.#states.delete(key);
      log.error({ err, stored }, 'turn failed');
      const failed: TurnResult = stored
        ? { reply: null, archived: 'stored', failedAfterStore: true }
        : { reply: null, archived: 'failed' };
      if (!stored && !message.reportsFailure) {
        const spooled = await this.#spool(incoming, message.platform);
        if (spooled) return spooled;
      }
      if (message.fromBot || message.reportsFailure) return failed;
      await this.#adapter(message.platform)
        .send(key, APOLOGY)
        .catch(() => {});
      return { ...failed, reply: APOLOGY };
    }
  }

  /** A redelivered message as the archive holds it, and the reply archived right after it (if any). */
  async #original(key: string, seq: number): Promise<TurnResult['original']> {
    try {
      const [message, next] = await this.#options.channels.readArchive(key, seq, seq + 1);
      if (!message) return undefined;
      return { text: message.text, reply: next?.role === 'assistant' ? next.text : null };
    } catch (err) {
      this.#options.logger.warn({ err, channel: key, seq }, 'could not read a redelivered message back');
      return undefined;
    }
  }

  /**
   * Archives a reply that is already posted: tried twice, then spooled (a reply is never followed
   * by an apology). `lost` when the spool cannot take it either; the cache is dropped either way.
   * `log` is the turn's, bound to its channel.
   */
  async #archiveReply(
    key: string,
    state: ChannelState,
    tokenizer: Tokenizer,
    settings: ResolvedChannelConfig,
    reply: Omit<SpooledMessage, 'channelKey'>,
    log: Logger,
  ): Promise<'stored' | 'spooled' | 'lost'> {
    try {
      await this.#append(key, state, tokenizer, settings, reply).catch(() =>
        this.#append(key, state, tokenizer, settings, reply),
      );
      return 'stored';
    } catch (err) {
      this.#states.delete(key);
      if (this.#options.spool) {
        try {
          await this.#options.spool.push({ channelKey: key, ...reply });
          this.#spooled.add(key);
          log.warn({ err }, 'posted a reply the archive could not take; spooled it');
          return 'spooled';
        } catch {
          // Redis and the disk refused it too: fall through.
        }
      }
      log.error({ err }, 'posted a reply but could not archive it');
      return 'lost';
    }
  }

  /**
   * Keeps a message the archive could not take in the spool, and tells the channel once per outage.
   * Undefined when the spool cannot take it either (none, or Redis down too).
   */
  async #spool(message: SpooledMessage, platform: Platform): Promise<TurnResult | undefined> {
    const spool = this.#options.spool;
    if (!spool) return undefined;
    try {
      await spool.push(message);
    } catch (err) {
      this.#options.logger.error({ err, channel: message.channelKey }, 'could not spool a message either');
      return undefined;
    }
    this.#spooled.add(message.channelKey);
    if (!this.#noticed.has(message.channelKey) && message.role === 'user') {
      this.#noticed.add(message.channelKey);
      await this.#adapter(platform)
        .send(message.channelKey, CATCH_UP_NOTICE)
        .catch(() => {});
    }
    return { reply: null, archived: 'spooled' };
  }

  /**
   * Replays the channel's spooled messages into the archive, oldest first (a message archived before
   * is skipped on its platform id). True when nothing is left; false when the archive is still away.
   * Runs in the channel's actor.
   */
  async #catchUp(key: string): Promise<boolean> {
    const spool = this.#options.spool;
    if (!spool || !this.#spooled.has(key)) return true;
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
      const state = await this.#state(key);
      while (batch.length > 0) {
        for (const { message } of batch) await this.#append(key, state, tokenizer, settings, message);
        await spool.remove(
          key,
          batch.map((e) => e.id),
        );
        replayed += batch.length;
        batch = await spool.peek(key, SPOOL_BATCH);
      }
      await this.#monitor(key, state, settings, tokenizer);
    } catch (err) {
      this.#states.delete(key);
      if (replayed > 0) this.#options.logger.warn({ err, channel: key, replayed }, 'spool replay stopped');
      return false;
    }
    this.#spooled.delete(key);
    this.#noticed.delete(key);
    this.#options.logger.info(
      { event: 'spool.replayed', channel: key, messages: replayed },
      `archived ${replayed} spooled messages of ${key}`,
    );
    return true;
  }

  /** Every channel with spooled messages, each in its actor; one round at a time. */
  async #replayAll(): Promise<void> {
    const spool = this.#options.spool;
    if (!spool || this.#replaying) return;
    this.#replaying = true;
    try {
      const keys = await spool.channels().catch(() => []);
      for (const key of keys) this.#spooled.add(key);
      await Promise.all(keys.map((key) => this.#actors.run(key, () => this.#catchUp(key))));
    } finally {
      this.#replaying = false;
    }
  }

  /**
   * Appends a message to the store and to the cached context: its seq, and whether it is new (a
   * redelivery gives the seq it was stored under). NUL characters, which Postgres cannot store in
   * text, are dropped.
   */
  async #append(
    key: string,
    state: ChannelState,
    tokenizer: Tokenizer,
    settings: ResolvedChannelConfig,
    message: {
      role: 'user' | 'assistant';
      author: string;
      text: string;
      ts: string;
      platformMessageId: string;
    },
  ): Promise<{ seq: number; inserted: boolean }> {
    const whole = { seq: 0, ...message, author: withoutNul(message.author), text: withoutNul(message.text) };
    const { entry, archivedTokens } = measureMessage(whole, tokenizer, settings.compaction.messageMaxTokens);
    const { seq: _placeholder, ...rest } = entry;
    const result = await this.#options.channels.append(key, {
      ...rest,
      // The archive keeps the whole text; the context may hold a clipped copy.
      text: whole.text,
      tokens: archivedTokens,
      contextTokens: entry.tokens,
      platformMessageId: message.platformMessageId,
      ...(entry.omittedTokens === undefined ? {} : { contextText: entry.text }),
    });
    if (!result.inserted) return { seq: result.seq, inserted: false };
    // Another process changed the channel since we cached it: reload instead of guessing.
    if (result.generation !== state.context.generation || result.seq !== state.context.headSeq + 1) {
      state.context = new WorkingContext(await this.#options.channels.loadContext(key));
    } else {
      state.context.append({ ...entry, seq: result.seq });
    }
    return { seq: result.seq, inserted: true };
  }

  async #reply(
    key: string,
    state: ChannelState,
    tokenizer: Tokenizer,
    settings: ResolvedChannelConfig,
    text: string,
  ): Promise<string> {
    const recalled = await this.#recall(key, settings, tokenizer, text);
    const adapter = this.#adapter(platformOfKey(key));
    for (let attempt = 0; ; attempt++) {
      const messages = renderContext({
        systemPrompt: settings.bot.systemPrompt,
        memories: recalled.memories,
        context: state.context.view(),
      });
      void adapter.typing(key);
      try {
        const reply = await this.#options.chatModel(key).reply(messages);
        if (reply.promptTokens) {
          // Against what was actually rendered (recalled memories rarely fill their budget), from
          // counts already made: the context's running total, the system prompt, the memories.
          const estimated =
            state.context.tokens + this.#promptTokens(tokenizer, settings.bot.systemPrompt) + recalled.tokens;
          state.calibration = calibrate(state.calibration, estimated, reply.promptTokens);
          if (state.calibration.samples % CALIBRATION_SAVE_EVERY === 0) {
            void this.#options.channels.setCalibration(key, state.calibration).catch(() => {});
          }
        }
        return reply.text;
      } catch (err) {
        if (!isLlmError(err, 'llm_context_overflow') || attempt >= MAX_OVERFLOW_RETRIES) throw err;
        // The provider counts more than we do: cut now, calibrate up, and try again.
        state.calibration = {
          factor: Math.min(2, state.calibration.factor * 1.1),
          samples: state.calibration.samples,
        };
        const after = await this.#compaction.truncateNow(
          key,
          this.#compactorSettings(settings, tokenizer),
          state.calibration,
          1,
        );
        if (!after) throw err;
        state.context = new WorkingContext(after);
      }
    }
  }

  /** Memories of this channel's scope only, ranked by the store, within the recall budget; and their tokens. */
  async #recall(
    key: string,
    settings: ResolvedChannelConfig,
    tokenizer: Tokenizer,
    text: string,
  ): Promise<{ memories: Memory[]; tokens: number }> {
    const budget = settings.memory.recallMaxTokens;
    if (budget <= 0) return { memories: [], tokens: 0 };
    const found = await this.#options.memories.recall({
      scopes: [memoryScope(key, settings.memory.scope)],
      text,
      limit: RECALL_CANDIDATES,
    });
    const memories: Memory[] = [];
    let tokens = 0;
    for (const memory of found) {
      const next = chatMessageTokens(tokenizer, renderMemories([...memories, memory]));
      if (next > budget) break;
      memories.push(memory);
      tokens = next;
    }
    return { memories, tokens };
  }

  /** Runs the monitor; returns the usage after it acted. */
  async #monitor(
    key: string,
    state: ChannelState,
    settings: ResolvedChannelConfig,
    tokenizer: Tokenizer,
  ): Promise<number> {
    const compactorSettings = this.#compactorSettings(settings, tokenizer);
    const result = await this.#compaction.afterTurn(
      key,
      state.context.view(),
      compactorSettings,
      state.calibration,
    );
    if (!result.context) return result.usage;
    state.context = new WorkingContext(result.context);
    return this.#compaction.usage(state.context.view(), compactorSettings, state.calibration);
  }

  /** The monitor alone, outside a turn (after a context change); a failure waits for the next turn. */
  async #recheck(key: string): Promise<void> {
    try {
      const settings = resolveChannel(this.#options.config(), key);
      const tokenizer = await loadTokenizer(settings.llm.encoding);
      await this.#monitor(key, await this.#state(key), settings, tokenizer);
    } catch (err) {
      this.#states.delete(key);
      this.#options.logger.warn(
        { err, channel: key },
        'could not re-check compaction after a context change',
      );
    }
  }

  async #command(command: CommandInvocation): Promise<string> {
    const key = command.channelKey;
    const config = this.#options.config();
    const settings = resolveChannel(config, key);
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    const state = await this.#state(key);
    const compactorSettings = this.#compactorSettings(settings, tokenizer);
    switch (command.name) {
      case 'context': {
        const runs = await this.#options.runs.recent(key, 3);
        const scope = memoryScope(key, settings.memory.scope);
        const memories = await this.#options.memories.count({ scope });
        const usage = this.#compaction.usage(state.context.view(), compactorSettings, state.calibration);
        return contextReport({
          key,
          usage,
          settings,
          context: state.context.view(),
          runs,
          memories,
          reservedTokens: compactorSettings.reservedTokens,
        });
      }
      case 'compact': {
        const admins = command.platform === 'web' ? undefined : config[command.platform].admins;
        if (admins && !admins.includes(command.userId))
          return 'Only the admins configured for this workspace can run /compact.';
        const focus = command.args.trim();
        // Past the limit the job payload would be refused: say why, instead of `queue_unavailable`.
        const problem = focusProblem(focus);
        if (problem) return problem;
        const result = await this.#compaction.compactNow(
          key,
          state.context.view(),
          compactorSettings,
          state.calibration,
          focus || undefined,
        );
        return result.jobId
          ? `Compaction queued${focus ? ` (focus: ${focus})` : ''}: ${result.jobId}`
          : result.reason === 'in_flight'
            ? 'A compaction pass of this channel is already queued or running; try again when it is done.'
            : `Nothing to compact right now (${result.reason ?? 'no reason'}).`;
      }
    }
  }

  async #state(key: string): Promise<ChannelState> {
    let state = this.#states.get(key);
    if (!state || state.stale) {
      const context = new WorkingContext(await this.#options.channels.loadContext(key));
      const calibration =
        state?.calibration ?? (await this.#options.channels.calibration(key).catch(() => UNCALIBRATED));
      if (state?.stale) await this.#contextChanged(key, state.context, context, calibration);
      state = { context, calibration, stale: false };
      this.#states.set(key, state);
    }
    return state;
  }

  /** A worker's splice landed: the compactor learns the pass's duration and whether it helped. */
  async #contextChanged(
    key: string,
    before: WorkingContext,
    after: WorkingContext,
    calibration: Calibration,
  ): Promise<void> {
    const settings = resolveChannel(this.#options.config(), key);
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    const compactorSettings = this.#compactorSettings(settings, tokenizer);
    const usage = (context: WorkingContext) =>
      this.#compaction.usage(context.view(), compactorSettings, calibration);
    await this.#compaction.contextChanged(key, settings.compaction, usage(before), usage(after));
  }

  get #compaction(): ChannelCompactor {
    if (!this.#compactor) throw new BotError('the bot is not started', { code: 'not_started' });
    return this.#compactor;
  }

  #compactorSettings(settings: ResolvedChannelConfig, tokenizer: Tokenizer): CompactorSettings {
    return compactorSettingsOf(settings, this.#promptTokens(tokenizer, settings.bot.systemPrompt));
  }

  /**
   * Tokens of the system message a prompt renders to, counted once per prompt and encoding (it is
   * read several times a turn).
   */
  #promptTokens(tokenizer: Tokenizer, prompt: string): number {
    const key = `${tokenizer.encoding}\u0000${prompt}`;
    return this.#promptTokenCache.getOrSet(key, () => systemPromptTokens(tokenizer, prompt));
  }

  #adapter(platform: Platform): PlatformAdapter {
    const adapter = this.#adapters.get(platform);
    if (!adapter) throw new BotError(`no ${platform} adapter is running`, { code: 'no_adapter' });
    return adapter;
  }
}

function withoutNul(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '') : text;
}

function platformOfKey(channelKey: string): Platform {
  const platform = platformOf(channelKey);
  if (platform === undefined) {
    throw new BotError(`unknown platform in channel key ${channelKey}`, { code: 'invalid_channel_key' });
  }
  return platform;
}
