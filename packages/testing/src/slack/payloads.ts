/**
 * Builders for the payloads Slack sends an app, shaped like the real ones (fields Ebb and Bolt read
 * are always present): message events of every kind the bot meets, `app_mention`, edits and deletes,
 * slash commands, and the `event_callback` envelope around an event.
 *
 *   const msg = slack.build.channelMessage({ text: `hi ${slack.build.mention()}` });
 *   const mention = slack.build.appMentionFor(msg); // the duplicate Slack sends for the same message
 */
import { randomBytes } from 'node:crypto';
import { FAKE_SLACK, type FakeWorkspace } from './workspace.js';

/** A Slack event (`event` inside an `event_callback`). */
export type SlackEventPayload = Readonly<Record<string, unknown>> & {
  readonly type: string;
  readonly channel?: string;
  readonly ts?: string;
};

/** The form fields of a slash command request. */
export interface SlashCommandPayload {
  readonly token: string;
  readonly team_id: string;
  readonly team_domain: string;
  readonly channel_id: string;
  readonly channel_name: string;
  readonly user_id: string;
  readonly user_name: string;
  readonly command: string;
  readonly text: string;
  readonly api_app_id: string;
  readonly is_enterprise_install: string;
  readonly response_url: string;
  readonly trigger_id: string;
}

export interface MessageInput {
  readonly text: string;
  /** `alice` by default. */
  readonly user?: string;
  /** `#general` by default (the DM with alice for `directMessage`). */
  readonly channel?: string;
  /** A fresh ts by default. */
  readonly ts?: string;
  readonly threadTs?: string;
}

export interface BotMessageInput {
  readonly text: string;
  readonly channel?: string;
  readonly ts?: string;
  readonly threadTs?: string;
  /** Another app's bot (`deploybot`) by default. */
  readonly botId?: string;
  readonly username?: string;
}

export interface SlashCommandInput {
  /** With its slash: `/context`. */
  readonly command: string;
  readonly text?: string;
  readonly user?: string;
  readonly channel?: string;
}

/** The verification token Slack used to put in payloads (deprecated; Bolt ignores it). */
export const VERIFICATION_TOKEN = 'fake-verification-token';

export class SlackPayloads {
  readonly #workspace: FakeWorkspace;
  readonly #responseUrl: () => string;
  readonly #eventIds = new WeakMap<object, string>();

  constructor(workspace: FakeWorkspace, responseUrl: () => string) {
    this.#workspace = workspace;
    this.#responseUrl = responseUrl;
  }

  /** `<@BOTUSERID>`: how Slack writes a mention of the bot in message text. */
  mention(userId = this.#workspace.identity.botUserId): string {
    return `<@${userId}>`;
  }

  /** A person's message in a channel (top level). */
  channelMessage(input: MessageInput): SlackEventPayload {
    return this.#userMessage(input, FAKE_SLACK.channels.general);
  }

  /** A person's reply in the thread under `threadTs`. */
  threadReply(input: MessageInput & { readonly threadTs: string }): SlackEventPayload {
    return this.#userMessage(input, FAKE_SLACK.channels.general);
  }

  /** A person's direct message to the bot (`channel_type: 'im'`). */
  directMessage(input: MessageInput): SlackEventPayload {
    return this.#userMessage(input, FAKE_SLACK.channels.aliceDm);
  }

  /**
   * `assistant_thread_started`: a person opened a new thread with the app in Slack's AI-app surface
   * (a DM, alice's by default); their messages then arrive as `directMessage({ threadTs })`.
   */
  assistantThreadStarted(input: {
    readonly threadTs: string;
    readonly channel?: string;
    readonly user?: string;
  }): SlackEventPayload {
    const channel = input.channel ?? FAKE_SLACK.channels.aliceDm;
    const eventTs = this.#workspace.nextTs();
    return {
      type: 'assistant_thread_started',
      assistant_thread: {
        user_id: input.user ?? FAKE_SLACK.users.alice,
        context: {
          channel_id: FAKE_SLACK.channels.general,
          team_id: this.#workspace.identity.teamId,
          enterprise_id: null,
        },
        channel_id: channel,
        thread_ts: input.threadTs,
      },
      event_ts: eventTs,
    };
  }

  /** The `app_mention` event; Slack sends it besides the `message` event for the same message. */
  appMention(input: MessageInput): SlackEventPayload {
    const ts = input.ts ?? this.#workspace.nextTs();
    return {
      type: 'app_mention',
      client_msg_id: clientMsgId(),
      user: input.user ?? FAKE_SLACK.users.alice,
      text: input.text,
      ts,
      team: this.#workspace.identity.teamId,
      channel: input.channel ?? FAKE_SLACK.channels.general,
      event_ts: ts,
      ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
      blocks: richText(input.text),
    };
  }

  /** The `app_mention` twin of a `message` event built here. */
  appMentionFor(message: SlackEventPayload): SlackEventPayload {
    const input: MessageInput = {
      text: String(message.text ?? ''),
      user: String(message.user ?? FAKE_SLACK.users.alice),
      channel: String(message.channel ?? FAKE_SLACK.channels.general),
      ts: String(message.ts),
      ...(typeof message.thread_ts === 'string' ? { threadTs: message.thread_ts } : {}),
    };
    return this.appMention(input);
  }

  /** A message from another app's bot, as a legacy `bot_message` (no `user`). */
  botMessage(input: BotMessageInput): SlackEventPayload {
    const ts = input.ts ?? this.#workspace.nextTs();
    const channel = input.channel ?? FAKE_SLACK.channels.general;
    return {
      type: 'message',
      subtype: 'bot_message',
      text: input.text,
      ts,
      username: input.username ?? FAKE_SLACK.otherBot.name,
      bot_id: input.botId ?? FAKE_SLACK.otherBot.botId,
      channel,
      event_ts: ts,
      channel_type: this.#workspace.channelType(channel),
      ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
    };
  }

  /**
   * The echo of a message this bot posted with `chat.postMessage`: Slack delivers it to the app
   * like any other (a modern app's message has `user` and `bot_id`, no subtype).
   */
  ownMessage(input: Omit<BotMessageInput, 'botId' | 'username'>): SlackEventPayload {
    const ts = input.ts ?? this.#workspace.nextTs();
    const channel = input.channel ?? FAKE_SLACK.channels.general;
    const id = this.#workspace.identity;
    return {
      type: 'message',
      user: id.botUserId,
      bot_id: id.botId,
      app_id: id.appId,
      text: input.text,
      ts,
      team: id.teamId,
      bot_profile: { id: id.botId, app_id: id.appId, name: id.botName, deleted: false, team_id: id.teamId },
      channel,
      event_ts: ts,
      channel_type: this.#workspace.channelType(channel),
      ...(input.threadTs ? { thread_ts: input.threadTs } : {}),
    };
  }

  /**
   * An edit of `original` (`subtype: 'message_changed'`): `message` is the message as it is now (same
   * `ts`, new text, an `edited` stamp), `previous_message` as it was; the event has its own `ts`.
   */
  messageChanged(original: SlackEventPayload, text: string): SlackEventPayload {
    const ts = this.#workspace.nextTs();
    const before = inner(original);
    const editor = before.user ?? before.bot_id;
    const now = {
      ...before,
      text,
      ...(before.blocks === undefined ? {} : { blocks: richText(text) }),
      edited: { user: editor, ts },
    };
    return this.#changeEvent('message_changed', original, ts, { message: now, previous_message: before });
  }

  /**
   * A change Slack reports that keeps the words: a link in `original` unfurled (`attachments` added,
   * no `edited` stamp).
   */
  messageUnfurled(original: SlackEventPayload, url = 'https://example.com/'): SlackEventPayload {
    const ts = this.#workspace.nextTs();
    const before = inner(original);
    const now = { ...before, attachments: [{ id: 1, from_url: url, original_url: url, title: url }] };
    return this.#changeEvent('message_changed', original, ts, { message: now, previous_message: before });
  }

  /** The deletion of `original` (`subtype: 'message_deleted'`). */
  messageDeleted(original: SlackEventPayload): SlackEventPayload {
    const ts = this.#workspace.nextTs();
    return this.#changeEvent('message_deleted', original, ts, {
      previous_message: inner(original),
      deleted_ts: original.ts,
    });
  }

  /**
   * The deletion of a thread parent that has replies: Slack keeps a tombstone in its place and reports
   * a `message_changed` whose message has `subtype: 'tombstone'`.
   */
  threadParentDeleted(parent: SlackEventPayload, replyCount = 1): SlackEventPayload {
    const ts = this.#workspace.nextTs();
    const tombstone = {
      type: 'message',
      subtype: 'tombstone',
      text: 'This message was deleted.',
      user: 'USLACKBOT',
      hidden: true,
      ts: parent.ts,
      thread_ts: parent.ts,
      reply_count: replyCount,
    };
    const before = { ...inner(parent), thread_ts: parent.ts, reply_count: replyCount };
    return this.#changeEvent('message_changed', parent, ts, { message: tombstone, previous_message: before });
  }

  /** A slash command; its `response_url` points at this fake. */
  slashCommand(input: SlashCommandInput): SlashCommandPayload {
    const channelId = input.channel ?? FAKE_SLACK.channels.general;
    const userId = input.user ?? FAKE_SLACK.users.alice;
    const id = this.#workspace.identity;
    return {
      token: VERIFICATION_TOKEN,
      team_id: id.teamId,
      team_domain: id.teamDomain,
      channel_id: channelId,
      channel_name: this.#workspace.channels.get(channelId)?.name ?? 'unknown',
      user_id: userId,
      user_name: this.#workspace.users.get(userId)?.name ?? 'unknown',
      command: input.command,
      text: input.text ?? '',
      api_app_id: id.appId,
      is_enterprise_install: 'false',
      response_url: this.#responseUrl(),
      trigger_id: `${Date.now()}.${randomBytes(6).toString('hex')}`,
    };
  }

  /**
   * The `event_callback` Slack wraps an event in. The same event object always gets the same
   * `event_id`, so sending it again is a faithful retry.
   */
  eventCallback(event: SlackEventPayload, eventId?: string): Readonly<Record<string, unknown>> {
    let id = eventId ?? this.#eventIds.get(event);
    if (!id) {
      id = `Ev${randomBytes(5).toString('hex').toUpperCase()}`;
      this.#eventIds.set(event, id);
    }
    const identity = this.#workspace.identity;
    return {
      token: VERIFICATION_TOKEN,
      team_id: identity.teamId,
      context_team_id: identity.teamId,
      context_enterprise_id: null,
      api_app_id: identity.appId,
      event,
      type: 'event_callback',
      event_id: id,
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [
        {
          enterprise_id: null,
          team_id: identity.teamId,
          user_id: identity.botUserId,
          is_bot: true,
          is_enterprise_install: false,
        },
      ],
      is_ext_shared_channel: false,
      event_context: `4-${randomBytes(12).toString('hex')}`,
    };
  }

  #changeEvent(
    subtype: 'message_changed' | 'message_deleted',
    original: SlackEventPayload,
    ts: string,
    fields: Readonly<Record<string, unknown>>,
  ): SlackEventPayload {
    const channel = String(original.channel ?? FAKE_SLACK.channels.general);
    return {
      type: 'message',
      subtype,
      ...fields,
      channel,
      hidden: true,
      ts,
      event_ts: ts,
      channel_type: this.#workspace.channelType(channel),
    };
  }

  #userMessage(input: MessageInput, defaultChannel: string): SlackEventPayload {
    const ts = input.ts ?? this.#workspace.nextTs();
    const channel = input.channel ?? defaultChannel;
    return {
      type: 'message',
      client_msg_id: clientMsgId(),
      text: input.text,
      user: input.user ?? FAKE_SLACK.users.alice,
      ts,
      team: this.#workspace.identity.teamId,
      blocks: richText(input.text),
      channel,
      event_ts: ts,
      channel_type: this.#workspace.channelType(channel),
      ...(input.threadTs ? { thread_ts: input.threadTs, parent_user_id: FAKE_SLACK.users.bob } : {}),
    };
  }
}

/** A message as Slack nests it in a change event: without the event's own fields. */
function inner(event: SlackEventPayload): Readonly<Record<string, unknown>> {
  const { channel: _channel, event_ts: _eventTs, channel_type: _channelType, ...message } = event;
  return message;
}

function clientMsgId(): string {
  const hex = randomBytes(16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function richText(text: string): readonly unknown[] {
  return [
    {
      type: 'rich_text',
      block_id: randomBytes(3).toString('hex'),
      elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text }] }],
    },
  ];
}
