/**
 * Decides what a Slack `message` or `app_mention` event is to Ebb, without any I/O: a message to
 * deliver (with its conversation, author and flags) or one to ignore, and why. The adapter carries
 * the decision out (name lookups, dedupe, the handler call).
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
  /** Edits, deletions, joins, topic changes and other subtypes that are not someone saying something. */
  | 'unsupported_subtype'
  /** This bot's own message, echoed back by Slack. */
  | 'own_message';

export type MessageDecision =
  | {
      readonly kind: 'ignore';
      readonly reason: IgnoreReason;
      readonly channel?: string;
      readonly ts?: string;
      readonly subtype?: string;
    }
  | { readonly kind: 'deliver'; readonly message: SlackMessage };

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
  if (!SPOKEN_SUBTYPES.has(subtype)) {
    return { kind: 'ignore', reason: 'unsupported_subtype', ...where, ...(subtype ? { subtype } : {}) };
  }
  const user = str(event.user);
  const botId = str(event.bot_id);
  if ((botId !== undefined && botId === self.botId) || (user !== undefined && user === self.botUserId)) {
    return { kind: 'ignore', reason: 'own_message', ...where };
  }

  const threadTs = str(event.thread_ts);
  const conversation: SlackConversation = {
    teamId: self.teamId,
    channelId: channel,
    ...(threadTs !== undefined && threadTs !== ts ? { threadTs } : {}),
  };
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
