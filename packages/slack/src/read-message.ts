/**
 * Decides what a Slack `message` or `app_mention` event is to Ebb, without any I/O: a message to
 * deliver (with its conversation, author and flags), a deletion or edit to report, or one to ignore,
 * and why. The adapter carries the decision out (name lookups, dedupe, the handler call).
 *
 * A change names the message by its `ts`, the id it was archived under (never `client_msg_id`,
 * which bot messages lack), in the conversation it was archived in: a thread reply's thread, read
 * from the changed message or `previous_message`, since the change event itself sits at the top.
 * When none of them carries a `thread_ts` (Slack leaves `previous_message` out of some deletions: a
 * message gone from its recent history, one an admin tool deleted), the change names the channel and
 * says its thread is unknown (`threadUnknown`): the bot looks for the message in the channel's threads.
 */
import { type SlackConversation, slackChannelKey } from './channel-key.js';

/** Who this bot is in its workspace (from `auth.test`). */
export interface SlackBotIdentity {
  readonly teamId: string;
  readonly botUserId: string;
  readonly botId: string;
}

export type IgnoreReason =
  /** Not a `message`/`app_mention` event, or one without a channel or ts. */
  | 'malformed'
  /** Joins, topic changes and other subtypes that are not someone saying or taking back something. */
  | 'unsupported_subtype'
  /** This bot's own message echoed back by Slack, or an edit of it (Ebb never edits its replies). */
  | 'own_message'
  /** A `message_changed` that kept the text: a link unfurled, a thread's reply count, a pin. */
  | 'unchanged';

export type MessageDecision =
  | {
      readonly kind: 'ignore';
      readonly reason: IgnoreReason;
      readonly channel?: string;
      readonly ts?: string;
      readonly subtype?: string;
    }
  | { readonly kind: 'deliver'; readonly message: SlackMessage }
  | { readonly kind: 'change'; readonly change: SlackChange };

/** A message to deliver, before names are looked up and markup is rendered. */
export interface SlackMessage {
  readonly conversation: SlackConversation;
  readonly channelKey: string;
  readonly channel: string;
  /** The message's own `ts`: its id, the same on every delivery and retry. */
  readonly ts: string;
  /** `channel_type` when the event carries it (`app_mention` does not). */
  readonly channelType: string | undefined;
  /** The user id, or the bot id of a legacy `bot_message` without a user. */
  readonly authorId: string;
  /** The name a bot message carries (`username`, `bot_profile.name`), when it carries one. */
  readonly authorNameHint: string | undefined;
  readonly fromBot: boolean;
  /** The raw Slack text (markup not yet rendered). */
  readonly text: string;
  readonly mentionsBot: boolean;
}

/**
 * A deletion (`message_deleted`, or a `message_changed` to a tombstone: a thread parent deleted while
 * it has replies) or an edit, before the edit's markup is rendered.
 */
export type SlackChange = {
  readonly channelKey: string;
  readonly channel: string;
  /** The change event's own `ts`: the same on every retry of it. */
  readonly eventTs: string;
  /** The `ts` of the message deleted or edited. */
  readonly messageTs: string;
  /**
   * No `thread_ts` on the changed message, `previous_message` or the event: `channelKey` is the
   * channel's, though the message may be a reply in one of its threads.
   */
  readonly threadUnknown?: true;
} & ({ readonly kind: 'deleted' } | { readonly kind: 'edited'; readonly text: string });

/** Subtypes that are someone (or some bot) saying something; every other subtype is ignored. */
const SPOKEN_SUBTYPES: ReadonlySet<string | undefined> = new Set([
  undefined,
  'bot_message',
  'thread_broadcast',
  'file_share',
  'me_message',
]);

export function readSlackMessage(event: unknown, self: SlackBotIdentity): MessageDecision {
  if (!isRecord(event)) return { kind: 'ignore', reason: 'malformed' };
  const type = str(event.type);
  const channel = str(event.channel);
  const ts = str(event.ts);
  const subtype = str(event.subtype);
  const where = { ...(channel ? { channel } : {}), ...(ts ? { ts } : {}) };
  if ((type !== 'message' && type !== 'app_mention') || !channel || !ts) {
    return { kind: 'ignore', reason: 'malformed', ...where };
  }
  if (type === 'message' && (subtype === 'message_deleted' || subtype === 'message_changed')) {
    return readChange(event, subtype, { channel, ts }, self);
  }
  if (!SPOKEN_SUBTYPES.has(subtype)) {
    return { kind: 'ignore', reason: 'unsupported_subtype', ...where, ...(subtype ? { subtype } : {}) };
  }
  if (isOwn(event, self)) return { kind: 'ignore', reason: 'own_message', ...where };

  const user = str(event.user);
  const botId = str(event.bot_id);
  const conversation = conversationOf(self, channel, ts, str(event.thread_ts));
  const text = typeof event.text === 'string' ? event.text : '';
  const botProfile = isRecord(event.bot_profile) ? event.bot_profile : {};
  return {
    kind: 'deliver',
    message: {
      conversation,
      channelKey: slackChannelKey(conversation),
      channel,
      ts,
      channelType: str(event.channel_type),
      authorId: user ?? botId ?? 'unknown',
      authorNameHint: str(event.username) ?? str(botProfile.name),
      fromBot: botId !== undefined || subtype === 'bot_message',
      text,
      mentionsBot: type === 'app_mention' || mentions(text, self.botUserId),
    },
  };
}

/** `posted`: the change event's own channel and ts, as every message in Slack is addressed. */
function readChange(
  event: Readonly<Record<string, unknown>>,
  subtype: 'message_deleted' | 'message_changed',
  posted: { readonly channel: string; readonly ts: string },
  self: SlackBotIdentity,
): MessageDecision {
  const { channel, ts: eventTs } = posted;
  const where = { channel, ts: eventTs, subtype };
  const previous = isRecord(event.previous_message) ? event.previous_message : undefined;
  const changed = (message: Readonly<Record<string, unknown>> | undefined, messageTs: string) => {
    const threadTs = str(message?.thread_ts) ?? str(previous?.thread_ts) ?? str(event.thread_ts);
    const conversation = conversationOf(self, channel, messageTs, threadTs);
    const guessed = threadTs === undefined ? ({ threadUnknown: true } as const) : {};
    return { channelKey: slackChannelKey(conversation), channel, eventTs, messageTs, ...guessed };
  };
  if (subtype === 'message_deleted') {
    const deletedTs = str(event.deleted_ts) ?? str(previous?.ts);
    if (!deletedTs) return { kind: 'ignore', reason: 'malformed', ...where };
    // This bot's own replies are deleted from the archive too: an admin took them back.
    return { kind: 'change', change: { kind: 'deleted', ...changed(undefined, deletedTs) } };
  }
  const message = isRecord(event.message) ? event.message : undefined;
  const messageTs = str(message?.ts);
  if (!message || !messageTs) return { kind: 'ignore', reason: 'malformed', ...where };
  if (str(message.subtype) === 'tombstone') {
    return { kind: 'change', change: { kind: 'deleted', ...changed(message, messageTs) } };
  }
  // The archive holds the Markdown the model wrote; a change Slack reports to this bot's message is
  // an unfurl or a re-render of the mrkdwn sent, never new words.
  if (isOwn(message, self)) return { kind: 'ignore', reason: 'own_message', ...where };
  const text = typeof message.text === 'string' ? message.text : '';
  const unchanged = previous ? previous.text === text : message.edited === undefined;
  if (unchanged) return { kind: 'ignore', reason: 'unchanged', ...where };
  return { kind: 'change', change: { kind: 'edited', ...changed(message, messageTs), text } };
}

/** A thread reply is its thread's conversation; a thread parent (`thread_ts` = `ts`) its channel's. */
function conversationOf(
  self: SlackBotIdentity,
  channel: string,
  ts: string,
  threadTs: string | undefined,
): SlackConversation {
  return {
    teamId: self.teamId,
    channelId: channel,
    ...(threadTs !== undefined && threadTs !== ts ? { threadTs } : {}),
  };
}

function isOwn(message: Readonly<Record<string, unknown>>, self: SlackBotIdentity): boolean {
  const user = str(message.user);
  const botId = str(message.bot_id);
  return (botId !== undefined && botId === self.botId) || (user !== undefined && user === self.botUserId);
}

/** True when `text` holds Slack's mention markup for `userId` (`<@U123>` or `<@U123|name>`). */
export function mentions(text: string, userId: string): boolean {
  return text.includes(`<@${userId}>`) || text.includes(`<@${userId}|`);
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
