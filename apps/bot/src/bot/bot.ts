/**
 * The bot: one turn per inbound message, in the channel's actor and, across replicas, under the
 * channel's lease, so a channel's turns run one at a time however many replicas serve it (the steps
 * of a turn are `message-turns.ts`'s header). Each channel's working context is cached and kept
 * current incrementally; a worker's splice arrives as a context-changed notification, and the
 * generation every append returns catches a missed one. The monitor never waits for a pass; an
 * emergency truncates at once. A deletion or an edit runs in the channel's actor too, in order with
 * its turns; while the archive is away it waits in the inbound spool with the messages.
 *
 * `Bot` is the lifecycle (start; stop in the order that loses nothing) and the dispatch of what the
 * platforms send to the channels' actors. The map of the parts beside it:
 *
 *   the turn path            `message-turns.ts`  (its steps, failures and apologies)
 *   spend limits             `channel-budgets.ts`
 *   claims and redeliveries  `redeliveries.ts`   (who answers a message delivered twice)
 *   the model's reply        `model-reply.ts`    (memories, the pinned prompt, the tool loop)
 *   the cache                `channel-states.ts` (contexts kept current; replicas' appends heard)
 *   the channel's lease      `turn-leases.ts`
 *   compaction               `bot-compaction.ts` (the compactor and the monitor), `cache-silence.ts`
 *   deletions and edits      `change-dispatch.ts` → `message-changes.ts`
 *   slash commands           `bot-commands.ts`
 *   the inbound spool        `spool-replay.ts`
 *   the adapters             `platform-connections.ts`
 *   what a bot is built from `bot-options.ts`
 */
import { setMaxListeners } from 'node:events';
import { passSettingsResolver, RetentionSweep, TakeBackRunner } from '@ebb/compaction';
import { resolveChannel, retentionConfigured } from '@ebb/config';
import type { Platform, PlatformAdapter, PlatformHandlers, TakeBack } from '@ebb/core';
import { settleWithin } from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import type { ContextCacheStats } from '@ebb/observability';
import { BotError } from '../errors.js';
import { OfferedTools } from '../status/offered-tools.js';
import { BotCommands } from './bot-commands.js';
import { BotCompaction } from './bot-compaction.js';
import type { BotOptions } from './bot-options.js';
import { CacheSilence } from './cache-silence.js';
import { ChangeDispatch } from './change-dispatch.js';
import { ChannelActors } from './channel-actors.js';
import { channelBudgets } from './channel-budgets.js';
import { ChannelStates } from './channel-states.js';
import { MessageChanges } from './message-changes.js';
import { MessageTurns } from './message-turns.js';
import { endedBy, ModelReplier } from './model-reply.js';
import { PlatformConnections, type PlatformStartPolicy } from './platform-connections.js';
import { Redeliveries } from './redeliveries.js';
import { SpoolReplay } from './spool-replay.js';
import { openTurn, type Turn } from './turn.js';
import { TurnLeases } from './turn-leases.js';

export type { BotOptions } from './bot-options.js';

/**
 * Past the grace period of a stop: how long the turns cut off (their model calls aborted) and the
 * refusals of the turns not started get to settle before the adapters stop. The caller that closes
 * the stores after `stop` waits this long on top of the grace period.
 */
export const TURN_CUT_OFF_MS = 3_000;

/** A command whose turn had not begun when the grace period of a stop ran out. */
const STOPPING_COMMAND_REPLY = 'Ebb is stopping; run this again in a moment.';

export class Bot {
  readonly #options: BotOptions;
  readonly #actors = new ChannelActors();
  /** When each channel's cache goes cold: a pass due soon lands then (`BotCompaction.onSilence`). */
  readonly #silence: CacheSilence;
  readonly #adapters = new Map<Platform, PlatformAdapter>();
  readonly #connections: PlatformConnections;
  readonly #compaction: BotCompaction;
  readonly #states: ChannelStates;
  readonly #commands: BotCommands;
  /** Deletions and edits, to their channels' actors (`change-dispatch.ts`). */
  readonly #dispatch: ChangeDispatch;
  /** Completes the take-backs of deletions and edits (this process's at once, any process's by sweep). */
  readonly #takeBacks: TakeBackRunner;
  /** Takes back what is older than a channel's `retain_days`, hourly, off the turn path. */
  readonly #retention: RetentionSweep;
  /** Absent without a spool: then a message the archive cannot take gets an apology. */
  readonly #spool: SpoolReplay | undefined;
  /** Aborted when the bot starts stopping: tool calls in flight end, and turns stop offering tools. */
  readonly #stopping = new AbortController();
  /** Aborted when the grace period of a stop runs out: model calls in flight end. */
  readonly #deadline = new AbortController();
  /** The turn path: one per inbound message (`message-turns.ts`). */
  readonly #turns: MessageTurns;
  #unsubscribe: (() => Promise<void>) | undefined;
  #unhear: (() => Promise<void>) | undefined;

  constructor(options: BotOptions) {
    this.#options = options;
    const botName = options.botName ?? 'ebb';
    this.#connections = new PlatformConnections(options.logger);
    // Every turn in flight listens to both (its model call, its tools, its wait for the lease): past
    // ten at once Node would warn of a leak that is not one.
    setMaxListeners(0, this.#stopping.signal, this.#deadline.signal);
    const { config, channels, memories, runs } = options;
    const adapter = (platform: Platform) => this.#adapter(platform);
    const compaction = new BotCompaction({
      config,
      channels,
      runs,
      queue: options.queue,
      ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
      offeredTools: new OfferedTools(options.toolbox),
      ...(options.now === undefined ? {} : { now: options.now }),
    });
    const states = new ChannelStates({
      channels,
      contextChanged: (key, calibration) => compaction.contextChanged(key, calibration),
      budgetBytes: () => config().process.contextCacheMb * 2 ** 20,
      ...(options.appends === undefined ? {} : { feed: options.appends }),
    });
    this.#compaction = compaction;
    this.#states = states;
    this.#silence = new CacheSilence({
      logger: options.logger,
      ...(options.now === undefined ? {} : { now: options.now }),
      ...(options.cacheSilenceCheckMs === undefined ? {} : { checkMs: options.cacheSilenceCheckMs }),
      onCold: (key) =>
        // On the store's context: a reply by another replica since then kept the cache warm.
        this.#offTurn(key, 'compaction.silence_failed', 'store', (turn) =>
          compaction.onSilence(turn, (options.now ?? Date.now)()),
        ),
    });
    const replier = new ModelReplier({
      channels,
      memories,
      chatModel: (key, model) => endedBy(this.#deadline.signal, options.chatModel(key, model)),
      compaction,
      states,
      botName,
      stopping: this.#stopping.signal,
      ...(options.toolbox === undefined ? {} : { toolbox: options.toolbox }),
      ...(options.onToolCall === undefined ? {} : { onToolCall: options.onToolCall }),
      ...(options.usage === undefined ? {} : { usage: options.usage }),
      ...(options.now === undefined ? {} : { now: options.now }),
    });
    this.#commands = new BotCommands({ config, runs, memories, states, compaction });
    const spool = options.spool;
    this.#takeBacks = new TakeBackRunner({
      channels,
      memories,
      runs,
      takeBacks: channels.takeBacks,
      settingsFor: options.passSettings ?? passSettingsResolver({ config, env: {} }),
      notifier: options.notifier,
      logger: options.logger,
      onContextChanged: (key, generation) => states.markStale(key, generation),
      ...(options.onTakeBackFinished === undefined ? {} : { onFinished: options.onTakeBackFinished }),
      // The spool's files keep no copy of a deleted message (an edit's old text is the archive's
      // only: the spool may still hold a later edit of it, which must replay).
      ...(spool === undefined
        ? {}
        : {
            afterCompleted: async (t: TakeBack) => {
              if (t.kind !== 'edited' && t.platformMessageIds.length > 0)
                await spool.scrub(t.channelKey, t.platformMessageIds);
            },
          }),
    });
    this.#retention = new RetentionSweep({
      channels,
      takeBacks: channels.takeBacks,
      runner: this.#takeBacks,
      enabled: () => retentionConfigured(config()),
      retainDaysFor: (key) => resolveChannel(config(), key).privacy.retainDays,
      tokenizerFor: (key) => loadTokenizer(resolveChannel(config(), key).llm.encoding),
      logger: options.logger,
      ...(options.onRetention === undefined ? {} : { onSwept: options.onRetention }),
    });
    const changes = new MessageChanges({
      config,
      channels,
      takeBacks: channels.takeBacks,
      runner: this.#takeBacks,
      recalling: (key, ids) => channels.findRecalling(key, ids),
      states,
      logger: options.logger,
      ...(options.onMessageChange === undefined ? {} : { onChange: options.onMessageChange }),
    });
    this.#spool =
      options.spool &&
      new SpoolReplay({
        spool: options.spool,
        ...(options.spoolReplayMs === undefined ? {} : { intervalMs: options.spoolReplayMs }),
        config,
        logger: options.logger,
        actors: this.#actors,
        states,
        compaction,
        adapter,
        applyChange: async (change) => {
          await this.#dispatch.apply(change);
        },
      });
    // The replay applies spooled changes through the dispatch, which waits behind the replay: the
    // replay's callback reads the dispatch when a change replays, after both exist.
    this.#dispatch = new ChangeDispatch({
      actors: this.#actors,
      changes,
      states,
      logger: options.logger,
      replay: this.#spool,
    });
    this.#turns = new MessageTurns({
      config,
      logger: options.logger,
      spool: options.spool,
      replay: this.#spool,
      leases: new TurnLeases(options.leases, this.#deadline.signal),
      states,
      replier,
      compaction,
      silence: this.#silence,
      redeliveries: new Redeliveries({
        ...(options.claims === undefined ? {} : { claims: options.claims }),
        channels,
        logger: options.logger,
        stopping: this.#stopping.signal,
      }),
      adapter,
      botName,
      deadline: this.#deadline.signal,
      now: options.now,
      onTurn: options.onTurn,
      budgets: channelBudgets(options),
      onBudget: options.onBudget,
    });
  }

  /** Platforms that could not connect yet, with their last error. */
  degradedPlatforms(): Record<string, string> {
    return this.#connections.degraded();
  }

  /** The working-context cache's counts and size, for `/metrics` and `/healthz`. */
  contextCache(): ContextCacheStats {
    return this.#states.stats();
  }

  /**
   * Starts the adapters and listens for context changes. With `policy`, a platform whose start fails
   * in a way time can mend runs degraded and is retried in the background (`PlatformConnections`).
   */
  async start(adapters: readonly PlatformAdapter[], policy?: PlatformStartPolicy): Promise<void> {
    await this.#compaction.start();
    this.#unsubscribe = await this.#options.notifier.subscribe((change) => {
      if (!this.#states.markStale(change.channelKey, change.generation)) return;
      // A pass landed: decide again now, in the channel's actor, rather than on the next message,
      // so a quiet channel still gets the heal or the next pass it needs.
      this.#offTurn(change.channelKey, 'compaction.recheck_failed', 'cached', (turn) =>
        this.#compaction.monitor(turn),
      );
    });
    this.#unhear = await this.#options.appends?.subscribe((key, appended) =>
      this.#states.heard(key, appended),
    );
    this.#silence.start();
    this.#spool?.start();
    // Take-backs a process left pending (it died, or the store failed) are finished here too.
    this.#takeBacks.start();
    // Retention runs where passes run: here only when this process runs them (see `sweepsRetention`).
    if (this.#options.sweepsRetention !== false) this.#retention.start();
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
   * caller after. A turn in its tool loop finishes at once: its tool calls in flight are cancelled
   * (each a result saying the bot is stopping, archived with its call) and the model is asked once
   * more with no tools, so it answers in words instead of holding the drain for up to
   * `call_timeout_seconds` × `max_steps`.
   *
   * When `drainMs` runs out, no turn starts any more: a web message not started is refused (503
   * `shutting_down`, not archived: the sender sends it again), a chat message (acknowledged to its
   * platform, which will not deliver it again) goes to the spool for the next start; the running
   * turns' model calls are aborted (their messages are kept, unanswered), and `stop` waits up to
   * `TURN_CUT_OFF_MS` for all that to settle before the adapters stop, so no client's connection is
   * cut without an answer and no turn runs on once the caller closes the stores.
   */
  async stop(drainMs = 10_000): Promise<void> {
    const log = this.#options.logger;
    const started = performance.now();
    this.#stopping.abort();
    this.#spool?.stop();
    // A check in hand hands its channels to the actors, which the drain below waits for.
    await this.#silence.stop();
    for (const adapter of this.#adapters.values()) await adapter.pause?.().catch(() => {});
    const busy = this.#actors.busy;
    const drained = await this.#actors.drain(drainMs);
    if (drained === 'timed_out') {
      const running = this.#actors.busy;
      const refused = this.#actors.close();
      this.#deadline.abort();
      const settled = await this.#actors.drain(TURN_CUT_OFF_MS);
      log.warn(
        { event: 'shutdown.grace_expired', graceMs: drainMs, channels: running, refused },
        `the grace period ran out: ${refused} turns not started were refused, the running ones cut off`,
      );
      if (settled === 'timed_out')
        log.error(
          { event: 'shutdown.turns_abandoned', channels: this.#actors.busy, ms: TURN_CUT_OFF_MS },
          'turns still running after their model calls were cut off; the stores close under them',
        );
    } else if (busy > 0) {
      log.info(
        { event: 'shutdown.turns_finished', channels: busy, ms: Math.round(performance.now() - started) },
        'finished the turns in hand',
      );
    }
    // The take-backs being completed get what is left of the grace period (their archive is
    // redacted and their summaries set aside already; one cut off stays pending and any process's
    // next sweep finishes it); no new one starts.
    await settleWithin(this.#retention.stop(), Math.max(0, drainMs - (performance.now() - started)));
    await this.#takeBacks.stop();
    await settleWithin(this.#takeBacks.idle(), Math.max(0, drainMs - (performance.now() - started)));
    await this.#connections.stop();
    for (const adapter of this.#adapters.values()) await adapter.stop().catch(() => {});
    await this.#unsubscribe?.();
    await this.#unhear?.();
  }

  handlers(): PlatformHandlers {
    return {
      onMessage: (message) =>
        this.#actors.run(
          message.channelKey,
          () => this.#turns.run(message),
          () => this.#turns.refused(message),
        ),
      onCommand: (command) =>
        this.#actors.run(
          command.channelKey,
          () => this.#commands.run(command),
          async () => STOPPING_COMMAND_REPLY,
        ),
      onMessageChange: (change) =>
        this.#actors.run(
          change.channelKey,
          () => this.#dispatch.change(change),
          () => this.#dispatch.keep(change, undefined),
        ),
    };
  }

  /** The take-backs this process is completing are all complete (tests). */
  takeBacksIdle(): Promise<void> {
    return this.#takeBacks.idle();
  }

  /** The monitor alone, outside a turn (after a context change); a failure waits for the next turn. */
  /**
   * A compaction step off the turn path, in the channel's actor (in order with its turns): after a
   * context change (`compaction.recheck_failed` if it fails) or a silence that let the cache go cold
   * (`compaction.silence_failed`). A failure drops the cached context: the next turn reloads it.
   */
  #offTurn(
    key: string,
    failed: 'compaction.recheck_failed' | 'compaction.silence_failed',
    /** `store`: the context read from the store first (`ChannelStates.current`), not the cached copy. */
    read: 'cached' | 'store',
    step: (turn: Turn) => Promise<unknown>,
  ): void {
    const states = read === 'store' ? { get: (k: string) => this.#states.current(k) } : this.#states;
    const run = async () => {
      try {
        const log = this.#options.logger.child({ channel: key });
        await step(await openTurn(key, this.#options.config(), states, log));
      } catch (err) {
        this.#states.forget(key);
        this.#options.logger.warn(
          { event: failed, err, channel: key },
          'a compaction step off the turn failed',
        );
      }
    };
    void this.#actors.run(key, run, async () => {});
  }

  #adapter(platform: Platform): PlatformAdapter {
    const adapter = this.#adapters.get(platform);
    if (!adapter) throw new BotError(`no ${platform} adapter is running`, { code: 'no_adapter' });
    return adapter;
  }
}
