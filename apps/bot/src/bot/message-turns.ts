/**
 * One turn per inbound message, in the channel's actor and, across replicas, under the channel's
 * lease (`turn-leases.ts`), so a channel's turns run one at a time however many replicas serve it:
 *
 *   lease → behind the spool → append (idempotent on the platform id) → answer? (respond_to, DMs,
 *   never bots) → claim (`redeliveries.ts`) → a spend limit reached? (`channel-budgets.ts`: the one
 *   notice, no answer, or the cheaper model) → cut past the emergency threshold → the model's reply
 *   (`model-reply.ts`: memories, the prompt pinned to the message, tools) → post → archive the reply
 *   → monitor → release
 *
 * A failure anywhere is never a crash: a message the archive did not take waits in the spool (or,
 * for a sender told of failures, is refused so it is sent again); a chat gets a short apology, never
 * after a reply that was posted.
 */
import type { EbbConfig } from '@ebb/config';
import type {
  InboundMessage,
  InboundSpool,
  Logger,
  Platform,
  PlatformAdapter,
  SpooledMessage,
  TurnResult,
} from '@ebb/core';
import { isLlmError } from '@ebb/llm';
import { type TurnOutcome, traceTurn } from '@ebb/observability';
import type { BotCompaction } from './bot-compaction.js';
import type { BotOptions } from './bot-options.js';
import type { CacheSilence } from './cache-silence.js';
import { type ChannelBudgets, limitedAnswer } from './channel-budgets.js';
import { type ChannelStates, ContextReloadError } from './channel-states.js';
import type { ModelAnswer, ModelReplier } from './model-reply.js';
import type { Redeliveries } from './redeliveries.js';
import type { SpoolReplay } from './spool-replay.js';
import { type Arrival, type MessageTurn, openTurn, type Turn } from './turn.js';
import type { TurnLeases } from './turn-leases.js';

export const APOLOGY =
  "Sorry, I can't reach my memory right now, so I can't answer. Please try again in a minute.";
export const MODEL_APOLOGY =
  "Sorry, the model I use isn't answering right now. Please try again in a minute.";
/** Said in a chat whose turn the end of a stop's grace period cut off (its message is kept). */
export const STOPPING_APOLOGY =
  "Sorry, I'm restarting and couldn't finish this answer. Please ask again in a minute.";
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

export interface MessageTurnsOptions {
  readonly config: () => EbbConfig;
  readonly logger: Logger;
  /** Where a chat message not started when a stop's grace period ran out waits for the next start. */
  readonly spool?: InboundSpool | undefined;
  /** The spool's replay: what a channel spooled goes into the archive before its next message. */
  readonly replay?: SpoolReplay | undefined;
  readonly leases: TurnLeases;
  readonly states: ChannelStates;
  readonly replier: ModelReplier;
  readonly compaction: BotCompaction;
  readonly silence: CacheSilence;
  readonly redeliveries: Redeliveries;
  readonly adapter: (platform: Platform) => PlatformAdapter;
  readonly botName: string;
  /** Aborted when the grace period of a stop runs out: a model call it ends is cut off, not failed. */
  readonly deadline: AbortSignal;
  /** The clock replies are stamped by (default `Date.now`). */
  readonly now?: (() => number) | undefined;
  readonly onTurn?: BotOptions['onTurn'];
  /** Spend limits (`[budget]`); without them a limit is not enforced. */
  readonly budgets?: ChannelBudgets | undefined;
  readonly onBudget?: BotOptions['onBudget'];
}

export class MessageTurns {
  readonly #options: MessageTurnsOptions;

  constructor(options: MessageTurnsOptions) {
    this.#options = options;
  }

  /**
   * A message's turn: behind what the spool holds of its channel, then stored and answered; a failure
   * anywhere is never a crash.
   */
  run(message: InboundMessage): Promise<TurnResult> {
    // The trace's root (`ebb turn`): its model calls, and the pass it queues, are its children.
    return traceTurn(message, turnOutcome, () => this.#run(message));
  }

  async #run(message: InboundMessage): Promise<TurnResult> {
    const log = this.#options.logger.child({ channel: message.channelKey });
    const lease = await this.#options.leases.take(message.channelKey, log);
    if (lease === 'stopping') return await this.refused(message);
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
   * A message whose turn had not begun when the grace period of a stop ran out. A sender told of
   * failures (the web API) is refused, nothing kept, and sends it again; a chat message was already
   * acknowledged to its platform, which will not deliver it again, so it waits in the spool for the
   * next start (its channel is not told: the catch-up notice is about the archive being away).
   */
  async refused(message: InboundMessage): Promise<TurnResult> {
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
      await this.#options
        .adapter(message.platform)
        .send(key, STOPPING_APOLOGY)
        .catch(() => {});
    return { reply: null, archived: 'failed' };
  }
  /**
   * Messages spooled before this one go into the archive first, so the order is kept; in a web
   * channel too, where the spool holds replies posted while the archive was away. The turn's result
   * when the spool could not be emptied (the message waits in it too); undefined when the turn goes on.
   */
  async #behindSpool({ message, incoming }: Arrival): Promise<TurnResult | undefined> {
    if (!this.#options.replay || (await this.#options.replay.catchUp(message.channelKey))) return undefined;
    // A sender told of failures sends the message again: it is not archived ahead of the spool.
    if (message.reportsFailure) return { reply: null, archived: 'failed' };
    return await this.#options.replay.keep(incoming, message.platform);
  }
  /**
   * Opens the channel's turn, stores the message (`progress.stored` once the archive holds it) and
   * answers it: a new message under its claim, a redelivery as `#redelivered` says.
   */
  async #storeAndAnswer(arrival: Arrival, progress: { stored: boolean }): Promise<TurnResult> {
    const { message, incoming, log } = arrival;
    const opened = await openTurn(message.channelKey, this.#options.config(), this.#options.states, log);
    const turn: MessageTurn = { ...arrival, ...opened };
    const appended = await this.#options.states.append(turn, incoming).catch((err: unknown) => {
      // Stored, but the context could not follow: the turn fails, its message kept (its
      // redelivery is answered).
      if (err instanceof ContextReloadError) progress.stored = true;
      throw err;
    });
    progress.stored = true;
    const answer =
      !message.fromBot && (message.direct || turn.settings.bot.respondTo === 'all' || message.mentionsBot);
    if (!appended.inserted)
      return await this.#options.redeliveries.redelivered(turn, appended.seq, answer, (t, s, a) =>
        this.#answer(t, s, a),
      );
    log.debug({ event: 'message.archived', seq: appended.seq, text: message.text }, 'message');
    const right = answer
      ? await this.#options.redeliveries.claimAnswer(turn, appended.seq, false)
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
    this.#options.states.forget(key);
    log.error({ event: 'turn.failed', err, stored }, 'turn failed');
    const failed: TurnResult = stored
      ? { reply: null, archived: 'stored', failedAfterStore: true }
      : { reply: null, archived: 'failed' };
    if (!stored && !message.reportsFailure) {
      const spooled = await this.#options.replay?.keep(incoming, message.platform);
      if (spooled) return spooled;
    }
    if (message.fromBot || message.reportsFailure) return failed;
    await this.#options
      .adapter(message.platform)
      .send(key, APOLOGY)
      .catch(() => {});
    return { ...failed, reply: APOLOGY };
  }
  /**
   * The answer step of the message stored under `seq`: the model's reply (a message not to answer
   * gets none), posted and archived, then the monitor.
   */
  async #answer(turn: MessageTurn, seq: number, answer: boolean): Promise<TurnResult> {
    const { key, message } = turn;
    let reply: string | null = null;
    let modelFailed = false;
    const limited = answer
      ? await limitedAnswer(this.#options.budgets, turn, this.#options.onBudget)
      : undefined;
    if (answer && !(limited && 'none' in limited)) {
      let answered: ModelAnswer | undefined;
      if (limited && 'notice' in limited) answered = { text: limited.notice, recalledMemories: [] };
      else {
        const on: MessageTurn = limited ? { ...turn, model: limited.model } : turn;
        await this.#cutPastEmergency(on);
        answered = await this.#modelText(on, seq);
        const ttlMs = 1000 * turn.settings.llm.cacheTtlSeconds;
        if (answered) this.#options.silence.replied(key, (this.#options.now ?? Date.now)(), ttlMs);
      }
      if (answered === undefined) modelFailed = true;
      else {
        reply = answered.text;
        const kept = await this.#postReply(turn, answered).catch(async (err: unknown) => {
          // The period's one notice did not reach the channel: the next message posts it.
          if (limited && 'notice' in limited) await limited.release().catch(() => {});
          throw err;
        });
        if (kept === 'lost') return { reply, archived: 'stored', failedAfterStore: true };
        // Kept for the archive; the store is away, so the monitor waits for the next turn.
        if (kept === 'spooled') return { reply, archived: 'stored' };
      }
    }
    const usage = await this.#options.compaction.monitor(turn);
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
    const compactorSettings = this.#options.compaction.settingsOf(settings, tokenizer);
    const usage = this.#options.compaction.compactor.usage(
      state.context.view(),
      compactorSettings,
      state.calibration,
    );
    if (usage >= settings.compaction.emergencyThreshold) await this.#options.compaction.monitor(turn);
  }
  /**
   * The text to post: the model's reply, or, when the model failed for good (retries done) or the
   * end of a stop's grace period cut it off, an apology; undefined for a sender told of failures
   * (the web API), who gets that in the answer's code, not as a reply.
   */
  async #modelText(turn: MessageTurn, seq: number): Promise<ModelAnswer | undefined> {
    const { key, message, log } = turn;
    try {
      const adapter = this.#options.adapter(message.platform);
      const typing = () => void adapter.typing(key);
      return await this.#options.replier.reply(turn, message.text, seq, typing);
    } catch (err) {
      // The archive failed mid-loop (a tool step could not be stored): that is the turn failing,
      // handled like any store failure, not the model's.
      if (!isLlmError(err)) throw err;
      const cutOff = isLlmError(err, 'llm_aborted') && this.#options.deadline.aborted;
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
    const sent = await this.#options.adapter(turn.message.platform).send(turn.key, answer.text);
    return await this.#archiveReply(
      turn,
      {
        role: 'assistant',
        author: this.#options.botName,
        text: answer.text,
        ts: new Date((this.#options.now ?? Date.now)()).toISOString(),
        platformMessageId: sent.platformMessageId,
      },
      answer.recalledMemories,
    );
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
      await this.#options.states
        .append(turn, archived)
        .catch(() => this.#options.states.append(turn, archived));
      return 'stored';
    } catch (err) {
      this.#options.states.forget(key);
      // Redis and the disk may refuse it too: then it falls through.
      if (await this.#options.replay?.keepReply({ channelKey: key, ...archived })) {
        log.warn({ event: 'reply.spooled', err }, 'posted a reply the archive could not take; spooled it');
        return 'spooled';
      }
      log.error({ event: 'reply.archive_failed', err }, 'posted a reply but could not archive it');
      return 'lost';
    }
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

/** How a turn ended, for its span. */
function turnOutcome(result: TurnResult): TurnOutcome {
  return {
    archived: result.archived,
    answered: result.reply !== null,
    ...(result.failedAfterStore ? { failed: true } : {}),
  };
}
