/**
 * The port between the bot and a chat platform (Slack, Discord, the web channel). An adapter turns
 * platform events into `InboundMessage`s and `CommandInvocation`s, and posts replies; the bot never
 * sees a platform type. Channel keys are built by adapters and name one conversation:
 * `slack:<team>:<channel>[:<thread_ts>]`, `discord:<guild>:<channel>[:<thread>]` (DMs use
 * `discord:dm:<channel>`), `web:<id>`. An adapter can parse its own keys back to ids.
 */

export const PLATFORMS = ['slack', 'discord', 'web'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** The platform of a channel key (or a config pattern over keys), by its `slack:` / `discord:` / `web:` prefix. */
export function platformOf(keyOrPattern: string): Platform | undefined {
  return PLATFORMS.find((platform) => keyOrPattern.startsWith(`${platform}:`));
}

/**
 * The keys of the conversations nested under `channelKey` (its threads: `slack:T:C:<thread_ts>` under
 * `slack:T:C`) start with `<channelKey>:`, so in code-unit order they lie in `[from, to)` (`;` follows
 * `:`). On the separator, not the bare prefix: `slack:T:C12` is not under `slack:T:C1`.
 */
export function threadKeyRange(channelKey: string): { readonly from: string; readonly to: string } {
  return { from: `${channelKey}:`, to: `${channelKey};` };
}

/** `key` names a conversation nested under `channelKey` (see `threadKeyRange`). */
export function isThreadKeyOf(key: string, channelKey: string): boolean {
  return key.startsWith(threadKeyRange(channelKey).from);
}

/**
 * The conversation a thread is under (`slack:T1:C1` for `slack:T1:C1:1700.1`, `discord:G1:C1` for
 * `discord:G1:C1:T9`): a web channel has no threads. A spend limit counts a channel's threads
 * toward it (`usage/spend-limits.ts`).
 */
export function threadParentOf(channelKey: string): string {
  const parts = channelKey.split(':');
  return parts[0] === 'slack' || parts[0] === 'discord' ? parts.slice(0, 3).join(':') : channelKey;
}

export interface InboundMessage {
  readonly platform: Platform;
  readonly channelKey: string;
  /** Slack `ts`/`client_msg_id`, Discord snowflake: the store ignores a second delivery of the same id. */
  readonly platformMessageId: string;
  readonly authorId: string;
  /** A display name for the transcript (never an email). */
  readonly authorName: string;
  /** Written by a bot or an app. Its text is archived as context; the bot never answers it. */
  readonly fromBot: boolean;
  /** The text, with platform markup for mentioning this bot replaced by `@<bot name>`. */
  readonly text: string;
  /** ISO 8601. */
  readonly ts: string;
  /** This bot is mentioned. */
  readonly mentionsBot: boolean;
  /** A direct message (DMs are always answered). */
  readonly direct: boolean;
  /**
   * The sender is told when a turn fails and sends the message again (the web API answers with a
   * status code): the bot posts no apology into the conversation for it.
   */
  readonly reportsFailure?: boolean;
}

export type CommandName = 'context' | 'compact';

export interface CommandInvocation {
  readonly platform: Platform;
  readonly name: CommandName;
  readonly channelKey: string;
  readonly userId: string;
  /** What follows the command (`/compact focus on the deploy plan` → `focus on the deploy plan`). */
  readonly args: string;
}

/** What became of one inbound message. */
export interface TurnResult {
  /**
   * The reply posted, or null when the bot did not answer (not addressed, a bot, a failure, a
   * duplicate of a message answered before). A duplicate of a message whose first turn left no reply
   * (it died, or failed after storing it) is answered, once whichever delivery does it.
   */
  readonly reply: string | null;
  /**
   * What the archive holds of the message: `stored` by this turn; `duplicate`, stored before under
   * its platform id (a redelivery); `failed`, the store failed before it could keep it, so nothing of
   * the turn is kept and the message must be sent again; `spooled`, the store was away and the
   * message waits in the inbound spool, archived in order once the store is back; `refused`, the
   * process is stopping and its grace period ran out before the turn began, so nothing is kept and
   * the sender sends it again (to the next process). Only a sender that `reportsFailure` is refused:
   * a chat message, already acknowledged to its platform, is spooled instead.
   */
  readonly archived: 'stored' | 'duplicate' | 'failed' | 'spooled' | 'refused';
  /** The message was stored, then the turn failed: no reply was made, or it was not kept. */
  readonly failedAfterStore?: boolean;
  /** For a duplicate: the text stored under the id, and its reply (archived after it, or made by this delivery), if any. */
  readonly original?: { readonly text: string; readonly reply: string | null };
}

/**
 * A person took back what they posted: a message deleted (Slack `message_deleted` or a tombstone
 * `message_changed`, Discord `MessageDelete`/`MessageBulkDelete`, the web API's DELETE), or edited
 * (Slack `message_changed`, Discord `MessageUpdate`, the web API's PUT). Named by the platform ids the
 * archive stores messages under; a change to a message the archive never held is a no-op.
 */
export type MessageChange = (
  | {
      readonly kind: 'deleted';
      readonly platform: Platform;
      readonly channelKey: string;
      /** One id, or a bulk deletion's many. */
      readonly platformMessageIds: readonly string[];
      /** ISO 8601: when the platform reported the change. */
      readonly ts: string;
    }
  | {
      readonly kind: 'edited';
      readonly platform: Platform;
      readonly channelKey: string;
      readonly platformMessageId: string;
      /** The new text, with mentions of this bot rewritten as `InboundMessage.text` is. */
      readonly text: string;
      /** ISO 8601: when the platform reported the change. */
      readonly ts: string;
    }
) & {
  /**
   * The platform did not say which thread the message is in (a Slack change without `thread_ts`
   * and without `previous_message`): `channelKey` is the channel's, a guess. When the channel holds no
   * message with the id, the bot looks for it in the channel's threads (`ArchiveReader.findInThreads`)
   * and applies the change there.
   */
  readonly threadUnknown?: true;
};

export interface PlatformHandlers {
  /**
   * Called for every message except this bot's own; resolves when the turn is done (the reply, if
   * any, posted through `send`). Adapters that must acknowledge quickly (Slack's 3 s) do not wait.
   */
  onMessage(message: InboundMessage): Promise<TurnResult | undefined>;
  /** Returns the reply text, shown to the invoking user (ephemeral where the platform allows). */
  onCommand(command: CommandInvocation): Promise<string>;
  /**
   * A message was deleted or edited on the platform. Resolves once the change is applied to the
   * archive, or spooled while the archive is away (applied in order after it, idempotent on the
   * platform id). Adapters that must acknowledge quickly do not wait. Optional: an adapter calls it
   * when present.
   */
  onMessageChange?(change: MessageChange): Promise<MessageChangeResult | undefined>;
}

/**
 * What a deletion or an edit reached, as the bot answers it (the web API's DELETE/PUT shows it):
 * `unknown` when the archive never held the message, `spooled` when the archive was away (applied
 * later, in order). Counts are of copies, never their text.
 */
export interface MessageChangeResult {
  readonly outcome: 'applied' | 'ignored' | 'unknown' | 'unchanged' | 'spooled';
  /** The take-back recorded with the tombstones (an applied change), until its copies are all rewritten. */
  readonly takeBack?: string;
  /** Copies found and taken back now: archived messages (the message, replies, tool results), memories, checkpoints. */
  readonly reached?: {
    readonly messages: number;
    readonly memories: number;
    readonly checkpoints: number;
    readonly summaries: number;
  };
  /** Summaries set aside and still being written again from the redacted archive (0: the take-back is complete). */
  readonly pending?: number;
}

export interface PlatformAdapter {
  readonly platform: Platform;
  start(handlers: PlatformHandlers): Promise<void>;
  /** Posts `text` into the conversation of `channelKey` (in its thread, for a thread key). */
  send(channelKey: string, text: string): Promise<{ readonly platformMessageId: string }>;
  /** A typing / thinking indicator while the model answers; best effort, never throws. */
  typing(channelKey: string): Promise<void>;
  /**
   * The first step of a graceful stop: take no new messages (the web API answers 503), while `send`
   * still works so the turns already taken can answer. Adapters without it keep receiving until `stop`.
   */
  pause?(): Promise<void>;
  /** Disconnects; called once the turns already taken have finished (or the grace period ran out). */
  stop(): Promise<void>;
}

/** A message waiting in the inbound spool: what the archive will get once it is back. */
export interface SpooledMessage {
  readonly channelKey: string;
  readonly role: 'user' | 'assistant';
  readonly author: string;
  readonly text: string;
  readonly ts: string;
  readonly platformMessageId: string;
  /** A bot reply's provenance: the memories recalled into the prompt it answered (`NewMessage.recalledMemories`). */
  readonly recalledMemories?: readonly string[];
}

/**
 * A deletion or an edit waiting in the inbound spool (it came while the archive was away): applied in
 * order with the channel's spooled messages once the archive is back. Entries written before changes
 * were spooled have no `change`: they are messages.
 */
export interface SpooledChange {
  readonly channelKey: string;
  readonly ts: string;
  /** The entry's own id (`change:<kind>:<ts>:<ids>`): spools tell their copies of an entry apart by it. */
  readonly platformMessageId: string;
  readonly change: MessageChange;
}

/** What the inbound spool holds: a message, or a change to messages spooled or archived before it. */
export type SpooledItem = SpooledMessage | SpooledChange;

export function isSpooledChange(item: SpooledItem): item is SpooledChange {
  return 'change' in item && item.change !== undefined;
}

/** The platform ids a change names. */
export function changeIds(change: MessageChange): readonly string[] {
  return change.kind === 'deleted' ? change.platformMessageIds : [change.platformMessageId];
}

/** A change as the spool keeps it. */
export function spooledChange(change: MessageChange): SpooledChange {
  const ids = changeIds(change);
  return {
    channelKey: change.channelKey,
    ts: change.ts,
    platformMessageId: `change:${change.kind}:${change.ts}:${ids.join(',')}`,
    change,
  };
}

/** A spooled message (or change) and the id `InboundSpool.remove` takes. */
export interface SpoolEntry {
  readonly id: string;
  readonly message: SpooledItem;
}

/**
 * Chat messages kept while the archive (Postgres) is unreachable, per channel in arrival order, until
 * the bot replays them into the archive (idempotent on the platform id). For platforms that do not
 * redeliver: Slack and Discord. Implemented on Redis streams and on a local append-only file (the
 * last resort, and embedded mode).
 */
export interface InboundSpool {
  push(message: SpooledItem): Promise<void>;
  /** The channel's oldest spooled messages, up to `limit`. */
  peek(channelKey: string, limit: number): Promise<readonly SpoolEntry[]>;
  remove(channelKey: string, ids: readonly string[]): Promise<void>;
  /** Channels that have spooled messages. */
  channels(): Promise<readonly string[]>;
  /**
   * Moves an entry the archive refuses for good out of the spool, into a dead-letter store an
   * operator can read (never dropped); resolves to where it went (a file, a Redis key).
   */
  deadLetter(channelKey: string, entry: SpoolEntry, reason: string): Promise<string>;
  /**
   * A take-back reached these platform messages: no copy of their text may stay behind in the spool's
   * storage (entries already replayed or removed whose lines are still on disk, dead letters, edits of
   * them) once this resolves. Pending entries that are not these messages are kept. Resolves to how
   * many stored records were dropped.
   */
  scrub(channelKey: string, platformMessageIds: readonly string[]): Promise<number>;
}

/**
 * Who answers a stored message, so two deliveries of it never both do: two replicas given the same
 * event, or a sender's retry while the first turn still runs on another replica. A turn claims the
 * message before it asks the model and releases it once its reply is archived or spooled; a claim
 * whose holder died expires. Implemented on Redis (`RedisAnswerClaims`); without it, a bot's channel
 * actor is the only guard, which is enough for one process.
 */
export interface AnswerClaims {
  /**
   * The message's claim, held (and kept alive) until `release`; undefined while another holder has
   * it. Throws when it cannot tell (Redis away).
   */
  claim(channelKey: string, platformMessageId: string): Promise<AnswerClaim | undefined>;
}

export interface AnswerClaim {
  /** Gives the claim up (the reply is archived or spooled, or the turn failed). Never throws. */
  release(): Promise<void>;
}

/**
 * One turn at a time per channel across replicas: several `ebb start` behind a load balancer serve
 * the same channel, and each one's channel actor orders only its own turns. A turn acquires the
 * channel's lease before it appends the user's message and holds it (kept alive) until its reply is
 * appended. Waiters are served first come, first served, across replicas; a holder or a waiter that
 * died (SIGKILL) stops blocking the channel within the lease's TTL. Implemented on Redis
 * (`RedisChannelLeases`); without it, the channel actor is the only order, enough for one process.
 */
export interface ChannelLeases {
  /**
   * Waits its turn and resolves to the channel's lease. Throws when it cannot ask (Redis away, also
   * while waiting): the caller falls back to its own order. Rejects with `signal.reason` once
   * `signal` aborts (a stopping bot), leaving the queue.
   */
  acquire(channelKey: string, signal?: AbortSignal): Promise<ChannelLease>;
}

export interface ChannelLease {
  /**
   * Greater than the fence of every earlier lease of the channel (a safe integer, microseconds-like).
   * The archive's append checks it, so a holder that stalled past its TTL, and whose lease passed
   * on, cannot write: the fence is the guard, `lost` only the early word.
   */
  readonly fence: number;
  /**
   * Aborts, with a `ChannelLeaseLostError`, once the lease may belong to someone else: a renewal
   * found it gone or taken, or none was confirmed for a TTL (Redis away). A turn checks it before
   * writing and hands it to its model call. Never aborts after `release`.
   */
  readonly lost: AbortSignal;
  /** Gives the lease to the next waiter (the reply is appended, or the turn failed). Never throws. */
  release(): Promise<void>;
}
