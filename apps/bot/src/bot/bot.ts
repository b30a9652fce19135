/**
 * The bot: one turn per inbound message, in the channel's actor and, across replicas, under the
 * channel's lease (`turn-leases.ts`), so a channel's turns run one at a time however many replicas
 * serve it.
 *
 *   lease → append (idempotent on the platform id) → answer? (respond_to, DMs, never bots) → recall
 *   memories → render the prompt, pinned to the message (`pinContext`) → model (with a typing
 *   indicator) ⇄ tool calls (archived, monitored, up to `[tools] max_steps` model calls) → post the
 *   final text → append the reply → monitor → release
 *
 * A message answered by an unleased turn is claimed first (`AnswerClaims`, across replicas), so two
 * deliveries of it never both answer; under the lease the claim would add nothing. A redelivery (the same platform id) gets the reply archived after the
 * message; when there is none (the first turn died, or failed after storing it), it runs the answer
 * step itself, under the claim, waiting while another delivery's turn holds it.
 *
 * Each channel's working context is cached in memory and kept current incrementally; a splice by a
 * worker arrives as a context-changed notification and marks the cache stale, and the generation
 * the store returns on every append catches a missed notification. The monitor never waits for a
 * pass; an emergency truncates at once; a provider context overflow truncates and retries.
 *
 * A deletion or an edit on the platform runs in the channel's actor too, in order with its turns
 * (`message-changes.ts`); the summaries it must write again are queued beside it
 * (`redaction-passes.ts`). While the archive is away it waits in the inbound spool with the messages.
 *
 * `Bot` coordinates; the parts live beside it: the cache in `channel-states.ts`, the compactor and
 * the monitor in `bot-compaction.ts`, the model call in `model-reply.ts`, the slash commands in
 * `bot-commands.ts`, the inbound spool in `spool-replay.ts`, the adapters in `platform-connections.ts`.
 */
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ChannelPassSettings,
  passSettingsResolver,
  RetentionSweep,
  type TakeBackFinish,
  TakeBackRunner,
} from '@ebb/compaction';
import { type EbbConfig, resolveChannel, retentionConfigured } from '@ebb/config';
import type {
  AnswerClaim,
  AnswerClaims,
  AppendFeed,
  ArchiveReader,
  ChannelDirectory,
  ChannelLeases,
  ChatModel,
  CheckpointEraser,
  CompactionEventSink,
  CompactionQueue,
  ContextNotifier,
  ContextWriter,
  Forgetting,
  InboundMessage,
  InboundSpool,
  Logger,
  MemoryStore,
  MessageChange,
  MessageChangeResult,
  Platform,
  PlatformAdapter,
  PlatformChanges,
  PlatformHandlers,
  RunStore,
  SpooledMessage,
  TakeBack,
  TakeBackLog,
  TurnLog,
  TurnResult,
  UsageStore,
} from '@ebb/core';
import { settleWithin } from '@ebb/core';
import { isLlmError, loadTokenizer } from '@ebb/llm';
import type { ContextCacheStats, ToolCallSample } from '@ebb/observability';
import type { Toolbox } from '@ebb/tools';
import { BotError } from '../errors.js';
import { OfferedTools } from '../offered-tools.js';
import { BotCommands } from './bot-commands.js';
import { BotCompaction } from './bot-compaction.js';
import { CacheSilence } from './cache-silence.js';
import { ChannelActors } from './channel-actors.js';
import { ChannelStates, ContextReloadError } from './channel-states.js';
import { type ChangeReport, changeResult, MessageChanges } from './message-changes.js';
import { type ModelAnswer, ModelReplier } from './model-reply.js';
import { PlatformConnections, type PlatformStartPolicy } from './platform-connections.js';
import { SpoolReplay } from './spool-replay.js';
import { openTurn, type Turn } from './turn.js';
import { TurnLeases } from './turn-leases.js';

export interface BotOptions {
  readonly config: () => EbbConfig;
  /** The channel store, with the take-backs it records beside its tombstones. */
  readonly channels: TurnLog &
    ArchiveReader &
    ContextWriter &
    Forgetting &
    PlatformChanges &
    Pick<ChannelDirectory, 'listChannels'> & { readonly takeBacks: TakeBackLog };
  readonly memories: MemoryStore;
  readonly runs: RunStore & CheckpointEraser;
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
  /**
   * Who answers a message, across replicas: without it, this process's channel actors are the only
   * guard against two deliveries of one message both answering (enough for one process).
   */
  readonly claims?: AnswerClaims;
  /**
   * One turn at a time per channel across replicas (`turn-leases.ts`): without it, this process's
   * channel actors order a channel's turns, which is enough for one process.
   */
  readonly leases?: ChannelLeases;
  /**
   * Replicas' appends, so each one's cached copy of a channel follows the others' turns without
   * reading them back (`channel-states.ts`); without it a copy that is behind reads the tail.
   */
  readonly appends?: AppendFeed;
  /** The tools channels may be allowed (built-in and MCP); without it the model is offered none. */
  readonly toolbox?: Toolbox;
  /** After every tool call: for metrics. */
  readonly onToolCall?: (sample: ToolCallSample) => void;
  /** Where each answered turn's tokens go, for a channel's cost in `ebb status` and the dashboard. */
  readonly usage?: UsageStore;
  /**
   * The clock replies are stamped by, a channel's pace measured on and its silence counted by
   * (default `Date.now`; tests move it).
   */
  readonly now?: () => number;
  /** How often channels are checked for a cache gone cold (default `CACHE_SILENCE_CHECK_MS`; tests shorten it). */
  readonly cacheSilenceCheckMs?: number;
  /**
   * The summarizer and budget of a channel's passes, for the summaries a deletion (or an edit under
   * `on_edit = "resummarize"`) writes again; default: `passSettingsResolver` without OPENAI_API_KEY.
   */
  readonly passSettings?: (channelKey: string) => Promise<ChannelPassSettings>;
  /**
   * Whether this bot runs the retention sweep (default true). False where `ebb worker` processes run
   * it (`ebb start` on Redis): beside no turns there.
   */
  readonly sweepsRetention?: boolean;
  /** After a retention sweep took back a channel's old messages: for metrics. */
  readonly onRetention?: (sweep: { readonly channel: string; readonly messages: number }) => void;
  /**
   * After each take-back this process completed, or tried to and failed (pending for the next sweep):
   * for the dashboard's live feed and the web channel's stream.
   */
  readonly onTakeBackFinished?: (takeBack: TakeBack, outcome: TakeBackFinish) => void;
  /** After every deletion or edit from a platform: for metrics. */
  readonly onMessageChange?: (report: ChangeReport & { readonly platform: string }) => void;
  /** After every turn: for metrics. */
  readonly onTurn?: (turn: {
    platform: Platform;
    /** The channel's key: the dashboard's usage series is per channel. */
    channel: string;
    answered: boolean;
    usage: number;
    durationMs: number;
  }) => void;
}

/** Messages read past a redelivered one to find its reply: room for a turn's tool steps. */
const ORIGINAL_LOOKAHEAD = 200;
/** How often a turn asks again for a message's claim while another delivery's turn holds it. */
const CLAIM_RETRY_MS = 200;
/**
 * Past the grace period of a stop: how long the turns cut off (their model calls aborted) and the
 * refusals of the turns not started get to settle before the adapters stop. The caller that closes
 * the stores after `stop` waits this long on top of the grace period.
 */
export const TURN_CUT_OFF_MS = 3_000;

export const APOLOGY =
  "Sorry, I can't reach my memory right now, so I can't answer. Please try again in a minute.";
export const MODEL_APOLOGY =
  "Sorry, the model I use isn't answering right now. Please try again in a minute.";
/** Said in a chat whose turn the end of a stop's grace period cut off (its message is kept). */
export const STOPPING_APOLOGY =
  "Sorry, I'm restarting and couldn't finish this answer. Please ask again in a minute.";
/** A command whose turn had not begun when the grace period of a stop ran out. */
const STOPPING_COMMAND_REPLY = 'Ebb is stopping; run this again in a moment.';

/** The log line of a model that failed for good: what to check first. */
function modelFailure(code: string): string {
  switch (code) {
    case 'llm_connection':
    case 'llm_timeout':
      return 'model call failed: the model server did not answer; check [llm] base_url and that the server is up';
    case 'llm_auth':
      return 'model call failed: the server refused the key; check OPENAI_API_KEY';
    case 'llm_quota_exceeded':
      return 'model call failed: the account is out of credit';
    case 'llm_unsupported_parameter':
      return 'model call failed: the server refused a request parameter; see [llm] token_limit_param and docs/providers-and-cost.md, "Providers"';
    default:
      return 'model call failed';
  }
}

/** A message's turn before its channel is opened: what each of its steps knows. */
interface Arrival {
  readonly message: InboundMessage;
  /** The message as the archive (or, while it is away, the spool) takes it. */
  readonly incoming: SpooledMessage;
  /** Bound to the channel. */
  readonly log: Logger;
  readonly started: number;
  /** The channel's lease's fence (`turn-leases.ts`), checked by every append of the turn; none unleased. */
  readonly fence?: number;
}

/** A message's turn once its channel's settings and state are read. */
type MessageTurn = Turn & Arrival;

export class Bot {
  readonly #options: BotOptions;
  readonly #actors = new ChannelActors();
  /** When each channel's cache goes cold: a pass due soon lands then (`BotCompaction.onSilence`). */
  readonly #silence: CacheSilence;
  readonly #adapters = new Map<Platform, PlatformAdapter>();
  readonly #connections: PlatformConnections;
  readonly #compaction: BotCompaction;
  readonly #states: ChannelStates;
  readonly #replier: ModelReplier;
  readonly #commands: BotCommands;
  readonly #changes: MessageChanges;
  /** Completes the take-backs of deletions and edits (this process's at once, any process's by sweep). */
  readonly #takeBacks: TakeBackRunner;
  /** Takes back what is older than a channel's `retain_days`, hourly, off the turn path. */
  readonly #retention: RetentionSweep;
  /** Absent without a spool: then a message the archive cannot take gets an apology. */
  readonly #spool: SpoolReplay | undefined;
  readonly #botName: string;
  /** Aborted when the bot starts stopping: tool calls in flight end, and turns stop offering tools. */
  readonly #stopping = new AbortController();
  /** Aborted when the grace period of a stop runs out: model calls in flight end. */
  readonly #deadline = new AbortController();
  /** Claiming answers failed, and has not worked since (logged once per run of failures). */
  #claimsFailing = false;
  readonly #leases: TurnLeases;
  #unsubscribe: (() => Promise<void>) | undefined;
  #unhear: (() => Promise<void>) | undefined;

  constructor(options: BotOptions) {
    this.#options = options;
    this.#botName = options.botName ?? 'ebb';
    this.#connections = new PlatformConnections(options.logger);
    // Every turn in flight listens to both (its model call, its tools, its wait for the lease): past
    // ten at once Node would warn of a leak that is not one.
    setMaxListeners(0, this.#stopping.signal, this.#deadline.signal);
    this.#leases = new TurnLeases(options.leases, this.#deadline.signal);
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
    this.#replier = new ModelReplier({
      channels,
      memories,
      chatModel: (key) => endedBy(this.#deadline.signal, options.chatModel(key)),
      compaction,
      states,
      botName: this.#botName,
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
    this.#changes = new MessageChanges({
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
          await this.#applyChange(change);
        },
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
          () => this.#turn(message),
          () => this.#refused(message),
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
          () => this.#change(change),
          () => this.#keepChange(change, undefined),
        ),
    };
  }

  /** The take-backs this process is completing are all complete (tests). */
  takeBacksIdle(): Promise<void> {
    return this.#takeBacks.idle();
  }

  /**
   * A deletion or an edit, in the channel's actor: behind what is spooled (it may name a spooled
   * message), else applied now; when the store fails part-way it is spooled and applied again in
   * full once the archive is back (every step is idempotent).
   */
  async #change(change: MessageChange): Promise<MessageChangeResult> {
    const key = change.channelKey;
    if (this.#spool && !(await this.#spool.catchUp(key))) return this.#keepChange(change, undefined);
    try {
      return mergedResult(await this.#applyChange(change));
    } catch (err) {
      this.#states.forget(key);
      return await this.#keepChange(change, err);
    }
  }

  /**
   * Applies a change where its messages are (`MessageChanges.locate`), in the actor of `change`'s
   * channel: the part found in a thread (a change that named no thread) goes through the thread's
   * actor, behind its turns and its spool, as a change that named the thread would. That wait never
   * closes a cycle: a located change names its conversation, and waits on no other actor.
   */
  async #applyChange(change: MessageChange): Promise<MessageChangeResult[]> {
    const results: MessageChangeResult[] = [];
    for (const located of await this.#changes.locate(change)) {
      if (located.channelKey === change.channelKey)
        results.push(changeResult(await this.#changes.apply(located)));
      else
        results.push(
          await this.#actors.run(
            located.channelKey,
            () => this.#change(located),
            () => this.#keepChange(located, undefined),
          ),
        );
    }
    return results;
  }

  /** Spools a change the archive could not take; throws when there is no spool or it refuses too. */
  async #keepChange(change: MessageChange, err: unknown): Promise<MessageChangeResult> {
    const kept = (await this.#spool?.keepChange(change)) === true;
    const fields = { event: 'message.change_spooled', err, channel: change.channelKey, kind: change.kind };
    if (kept) {
      this.#options.logger.warn(fields, 'the archive could not take a deletion or an edit now; spooled it');
      return { outcome: 'spooled' };
    }
    throw new BotError('a deletion or edit could not be applied or spooled', {
      code: 'change_not_kept',
      retryable: true,
      cause: err,
    });
  }

  /**
   * A message's turn: behind what the spool holds of its channel, then stored and answered; a failure
   * anywhere is never a crash.
   */
  async #turn(message: InboundMessage): Promise<TurnResult> {
    const log = this.#options.logger.child({ channel: message.channelKey });
    const lease = await this.#leases.take(message.channelKey, log);
    if (lease === 'stopping') return await this.#refused(message);
    const arrival: Arrival = {
      message,
      incoming: spooledOf(message),
      log,
      started: performance.now(),
      ...(lease ? { fence: lease.fence } : {}),
    };
    try {
      const behind = await this.#behindSpool(arrival);
      if (behind) return behind;
      const progress = { stored: false };
      try {
        return await this.#storeAndAnswer(arrival, progress);
      } catch (err) {
        return await this.#failed(arrival, progress.stored, err);
      }
    } finally {
      await lease?.release();
    }
  }

  /**
   * Messages spooled before this one go into the archive first, so the order is kept; in a web
   * channel too, where the spool holds replies posted while the archive was away. The turn's result
   * when the spool could not be emptied (the message waits in it too); undefined when the turn goes on.
   */
  async #behindSpool({ message, incoming }: Arrival): Promise<TurnResult | undefined> {
    if (!this.#spool || (await this.#spool.catchUp(message.channelKey))) return undefined;
    // A sender told of failures sends the message again: it is not archived ahead of the spool.
    if (message.reportsFailure) return { reply: null, archived: 'failed' };
    return await this.#spool.keep(incoming, message.platform);
  }

  /**
   * Opens the channel's turn, stores the message (`progress.stored` once the archive holds it) and
   * answers it: a new message under its claim, a redelivery as `#redelivered` says.
   */
  async #storeAndAnswer(arrival: Arrival, progress: { stored: boolean }): Promise<TurnResult> {
    const { message, incoming, log } = arrival;
    const opened = await openTurn(message.channelKey, this.#options.config(), this.#states, log);
    const turn: MessageTurn = { ...arrival, ...opened };
    const appended = await this.#states.append(turn, incoming).catch((err: unknown) => {
      // Stored, but the context could not follow: the turn fails, its message kept (its
      // redelivery is answered).
      if (err instanceof ContextReloadError) progress.stored = true;
      throw err;
    });
    progress.stored = true;
    const answer =
      !message.fromBot && (message.direct || turn.settings.bot.respondTo === 'all' || message.mentionsBot);
    if (!appended.inserted) return await this.#redelivered(turn, appended.seq, answer);
    log.debug({ event: 'message.archived', seq: appended.seq, text: message.text }, 'message');
    const right = answer
      ? await this.#claimAnswer(turn, appended.seq, false)
      : { kind: 'claimed' as const, claim: undefined };
    // Another delivery of this message answered it meanwhile (a replica that took it too).
    if (right.kind === 'answered') return { reply: right.reply, archived: 'stored' };
    try {
      return await this.#answer(turn, appended.seq, answer);
    } finally {
      await right.claim?.release();
    }
  }

  /**
   * A turn that failed: Postgres down (or any failure), never a crash; the next turn reloads. A
   * sender that is told of the failure (the web API) sends the message again; a chat gets a short
   * apology.
   */
  async #failed({ message, incoming, log }: Arrival, stored: boolean, err: unknown): Promise<TurnResult> {
    const key = message.channelKey;
    this.#states.forget(key);
    log.error({ event: 'turn.failed', err, stored }, 'turn failed');
    const failed: TurnResult = stored
      ? { reply: null, archived: 'stored', failedAfterStore: true }
      : { reply: null, archived: 'failed' };
    if (!stored && !message.reportsFailure) {
      const spooled = await this.#spool?.keep(incoming, message.platform);
      if (spooled) return spooled;
    }
    if (message.fromBot || message.reportsFailure) return failed;
    await this.#adapter(message.platform)
      .send(key, APOLOGY)
      .catch(() => {});
    return { ...failed, reply: APOLOGY };
  }

  /**
   * A message whose turn had not begun when the grace period of a stop ran out. A sender told of
   * failures (the web API) is refused, nothing kept, and sends it again; a chat message was already
   * acknowledged to its platform, which will not deliver it again, so it waits in the spool for the
   * next start (its channel is not told: the catch-up notice is about the archive being away).
   */
  async #refused(message: InboundMessage): Promise<TurnResult> {
    if (message.reportsFailure) return { reply: null, archived: 'refused' };
    const key = message.channelKey;
    // Without a spool there is nowhere to keep it (err undefined).
    const pushed = await this.#options.spool?.push(spooledOf(message)).then(
      () => true,
      (err: unknown) => err,
    );
    if (pushed === true) return { reply: null, archived: 'spooled' };
    this.#options.logger.error(
      {
        event: 'shutdown.message_dropped',
        channel: key,
        err: pushed,
        platformMessageId: message.platformMessageId,
      },
      'Ebb is stopping and could not spool a message it had not started on; it is not kept',
    );
    if (!message.fromBot)
      await this.#adapter(message.platform)
        .send(key, STOPPING_APOLOGY)
        .catch(() => {});
    return { reply: null, archived: 'failed' };
  }

  /**
   * A message stored before under its platform id: its reply, when the archive holds one. A message
   * to answer whose first turn left no reply (it died, or failed after storing it) is answered now,
   * under its claim: while another delivery's turn holds the claim this one waits, then returns the
   * reply that turn archived, so two deliveries never both answer.
   */
  async #redelivered(turn: MessageTurn, seq: number, answer: boolean): Promise<TurnResult> {
    const { key, message, log } = turn;
    const original = await this.#original(key, seq);
    // A different text under the id is a conflict, never answered; an unreadable archive, no answer.
    if (!answer || original === undefined || original.reply !== null || original.text !== message.text)
      return { reply: null, archived: 'duplicate', ...(original ? { original } : {}) };
    const right = await this.#claimAnswer(turn, seq, true);
    if (right.kind === 'answered')
      return { reply: null, archived: 'duplicate', original: { text: original.text, reply: right.reply } };
    try {
      log.info(
        { event: 'turn.redelivery_answered', seq },
        'answering a redelivered message its first turn left unanswered',
      );
      const result = await this.#answer(turn, seq, true);
      return {
        ...result,
        archived: 'duplicate',
        original: { text: original.text, reply: result.reply },
      };
    } finally {
      await right.claim?.release();
    }
  }

  /**
   * The right to answer a stored message: its claim (none to take without `claims`, or with Redis
   * away), or the reply another delivery's turn archived while this one waited for the claim. With
   * `recheck` (a redelivery, which found no reply before it asked) the archive is read again once the
   * claim is taken, as it is after any wait: the holder before may have answered.
   */
  async #claimAnswer(
    { key, message, log, fence }: MessageTurn,
    seq: number,
    recheck: boolean,
  ): Promise<{ kind: 'claimed'; claim?: AnswerClaim } | { kind: 'answered'; reply: string | null }> {
    const claims = this.#options.claims;
    // Under the channel's lease no other turn of the channel runs: another delivery waits for the
    // lease, then finds the reply. So a retry after a replica died waits for its lease (3 s), not
    // also for its claim (5 s).
    if (!claims || fence !== undefined) return { kind: 'claimed' };
    for (let waited = false; ; waited = true) {
      let claim: AnswerClaim | undefined;
      try {
        claim = await claims.claim(key, message.platformMessageId);
      } catch (err) {
        // Redis away: no replica can be asked. This process's own deliveries are still one at a time.
        if (!this.#claimsFailing)
          log.warn(
            { event: 'turn.claim_unavailable', err },
            'could not claim the answer to a message; answering without claims until they work again',
          );
        this.#claimsFailing = true;
        return { kind: 'claimed' };
      }
      this.#claimsFailing = false;
      if (claim) {
        if (!recheck && !waited) return { kind: 'claimed', claim };
        const original = await this.#original(key, seq);
        if (original !== undefined && original.reply === null) return { kind: 'claimed', claim };
        await claim.release();
        return { kind: 'answered', reply: original?.reply ?? null };
      }
      // Stopping: the turn in hand ends without answering rather than hold the drain.
      if (this.#stopping.signal.aborted) return { kind: 'answered', reply: null };
      await sleep(CLAIM_RETRY_MS);
    }
  }

  /**
   * The answer step of the message stored under `seq`: the model's reply (a message not to answer
   * gets none), posted and archived, then the monitor.
   */
  async #answer(turn: MessageTurn, seq: number, answer: boolean): Promise<TurnResult> {
    const { key, message } = turn;
    let reply: string | null = null;
    let modelFailed = false;
    if (answer) {
      await this.#cutPastEmergency(turn);
      const answered = await this.#modelText(turn, seq);
      if (answered === undefined) modelFailed = true;
      else {
        reply = answered.text;
        const ttlMs = 1000 * turn.settings.llm.cacheTtlSeconds;
        this.#silence.replied(key, (this.#options.now ?? Date.now)(), ttlMs);
        const kept = await this.#postReply(turn, answered);
        if (kept === 'lost') return { reply, archived: 'stored', failedAfterStore: true };
        // Kept for the archive; the store is away, so the monitor waits for the next turn.
        if (kept === 'spooled') return { reply, archived: 'stored' };
      }
    }
    const usage = await this.#compaction.monitor(turn);
    this.#options.onTurn?.({
      platform: message.platform,
      channel: key,
      answered: reply !== null,
      usage,
      durationMs: performance.now() - turn.started,
    });
    return { reply, archived: 'stored', ...(modelFailed ? { failedAfterStore: true } : {}) };
  }

  /**
   * A message that pushed the context past the emergency threshold is cut before the model sees it,
   * rather than sending a prompt the provider would refuse.
   */
  async #cutPastEmergency(turn: Turn): Promise<void> {
    const { state, settings, tokenizer } = turn;
    const compactorSettings = this.#compaction.settingsOf(settings, tokenizer);
    const usage = this.#compaction.compactor.usage(
      state.context.view(),
      compactorSettings,
      state.calibration,
    );
    if (usage >= settings.compaction.emergencyThreshold) await this.#compaction.monitor(turn);
  }

  /**
   * The text to post: the model's reply, or, when the model failed for good (retries done) or the
   * end of a stop's grace period cut it off, an apology; undefined for a sender told of failures
   * (the web API), who gets that in the answer's code, not as a reply.
   */
  async #modelText(turn: MessageTurn, seq: number): Promise<ModelAnswer | undefined> {
    const { key, message, log } = turn;
    try {
      const adapter = this.#adapter(message.platform);
      const typing = () => void adapter.typing(key);
      return await this.#replier.reply(turn, message.text, seq, typing);
    } catch (err) {
      // The archive failed mid-loop (a tool step could not be stored): that is the turn failing,
      // handled like any store failure, not the model's.
      if (!isLlmError(err)) throw err;
      const cutOff = isLlmError(err, 'llm_aborted') && this.#deadline.signal.aborted;
      if (cutOff)
        log.warn(
          { event: 'turn.cut_off' },
          'the grace period of the stop ran out while the model answered; the message is kept, unanswered',
        );
      else
        log.error(
          { event: 'turn.model_failed', err, code: err.code, failedTries: err.failedTries },
          modelFailure(err.code),
        );
      if (message.reportsFailure) return undefined;
      return { text: cutOff ? STOPPING_APOLOGY : MODEL_APOLOGY, recalledMemories: [] };
    }
  }

  /**
   * Posts the reply, then archives it. From the post on, a failure must not add an apology after
   * it: see `#archiveReply`.
   */
  async #postReply(turn: MessageTurn, answer: ModelAnswer): Promise<'stored' | 'spooled' | 'lost'> {
    const sent = await this.#adapter(turn.message.platform).send(turn.key, answer.text);
    return await this.#archiveReply(
      turn,
      {
        role: 'assistant',
        author: this.#botName,
        text: answer.text,
        ts: new Date((this.#options.now ?? Date.now)()).toISOString(),
        platformMessageId: sent.platformMessageId,
      },
      answer.recalledMemories,
    );
  }

  /**
   * A redelivered message as the archive holds it, and the reply archived after it (if any): the
   * first assistant message that calls no tools, past the tool steps of its turn.
   */
  async #original(key: string, seq: number): Promise<TurnResult['original']> {
    try {
      const [message, ...after] = await this.#options.channels.readArchive(
        key,
        seq,
        seq + ORIGINAL_LOOKAHEAD,
      );
      if (!message) return undefined;
      const end = after.findIndex((m) => m.role === 'user');
      const turn = end < 0 ? after : after.slice(0, end);
      const reply = turn.find((m) => m.role === 'assistant' && (m.toolCalls?.length ?? 0) === 0);
      return { text: message.text, reply: reply?.text ?? null };
    } catch (err) {
      this.#options.logger.warn(
        { event: 'turn.redelivery_unreadable', err, channel: key, seq },
        'could not read a redelivered message back',
      );
      return undefined;
    }
  }

  /**
   * Archives a reply that is already posted: tried twice, then spooled (a reply is never followed
   * by an apology). `lost` when the spool cannot take it either; the cache is dropped either way.
   */
  async #archiveReply(
    turn: Turn,
    reply: Omit<SpooledMessage, 'channelKey'>,
    recalledMemories: readonly string[],
  ): Promise<'stored' | 'spooled' | 'lost'> {
    const { key, log } = turn;
    // Its provenance goes with it, into the spool too: a take-back of a memory it recalled finds it.
    const archived = recalledMemories.length === 0 ? reply : { ...reply, recalledMemories };
    try {
      await this.#states.append(turn, archived).catch(() => this.#states.append(turn, archived));
      return 'stored';
    } catch (err) {
      this.#states.forget(key);
      // Redis and the disk may refuse it too: then it falls through.
      if (await this.#spool?.keepReply({ channelKey: key, ...archived })) {
        log.warn({ event: 'reply.spooled', err }, 'posted a reply the archive could not take; spooled it');
        return 'spooled';
      }
      log.error({ event: 'reply.archive_failed', err }, 'posted a reply but could not archive it');
      return 'lost';
    }
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

/** An inbound message as the spool keeps it. */
function spooledOf(message: InboundMessage): SpooledMessage {
  return {
    channelKey: message.channelKey,
    role: 'user',
    author: message.authorName,
    text: message.text,
    ts: message.ts,
    platformMessageId: message.platformMessageId,
  };
}

/** `model`, whose calls also end when `stop` aborts (a stop's grace period ran out). */
function endedBy(stop: AbortSignal, model: ChatModel): ChatModel {
  return {
    label: model.label,
    async reply(messages, options = {}) {
      // A signal of its own per call: the OpenAI client never takes its listener off the signal it
      // is given, so the bot's long-lived one would gather one per call.
      const call = new AbortController();
      const abort = () => call.abort();
      const sources = options.signal === undefined ? [stop] : [stop, options.signal];
      for (const source of sources) {
        if (source.aborted) call.abort();
        else source.addEventListener('abort', abort, { once: true });
      }
      try {
        return await model.reply(messages, { ...options, signal: call.signal });
      } finally {
        for (const source of sources) source.removeEventListener('abort', abort);
      }
    },
  };
}

/**
 * One answer for a change applied in several conversations (a change that named no thread): applied
 * when any part was, with what every part reached.
 */
function mergedResult(results: readonly MessageChangeResult[]): MessageChangeResult {
  const applied = results.filter((r) => r.outcome === 'applied');
  if (applied.length === 0) return results[0] ?? { outcome: 'unknown' };
  if (applied.length === 1) return applied[0] as MessageChangeResult;
  const sum = (pick: (r: NonNullable<MessageChangeResult['reached']>) => number) =>
    applied.reduce((n, r) => n + (r.reached === undefined ? 0 : pick(r.reached)), 0);
  return {
    outcome: 'applied',
    ...(applied[0]?.takeBack === undefined ? {} : { takeBack: applied[0].takeBack }),
    reached: {
      messages: sum((r) => r.messages),
      memories: sum((r) => r.memories),
      checkpoints: sum((r) => r.checkpoints),
      summaries: sum((r) => r.summaries),
    },
    pending: applied.reduce((n, r) => n + (r.pending ?? 0), 0),
  };
}
