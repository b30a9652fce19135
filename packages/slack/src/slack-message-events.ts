/**
 * Slack's `message` and `app_mention` events, carried to `onMessage`; deletions and edits
 * (`message_deleted`, `message_changed`) to `onMessageChange`. Both event types are handled, and a
 * bounded LRU of `channel:ts` drops the second delivery of a message: the `app_mention` twin of a
 * `message` event, and Slack's retries (`x-slack-retry-num` / `retry_attempt`), which carry the same
 * `ts` (a change event has its own `ts`, so its retries are dropped the same way). Listening to both
 * keeps the bot working for an app subscribed only to `app_mention` (fewer scopes), and the LRU is
 * needed for retries anyway. Every dropped event leaves a `slack.message_ignored` log line.
 */
import {
  type InboundMessage,
  type Logger,
  LruMap,
  type MessageChange,
  type PlatformHandlers,
} from '@ebb/core';
import type { webApi } from '@slack/bolt';
import {
  readSlackMessage,
  type SlackBotIdentity,
  type SlackChange,
  type SlackMessage,
} from './read-message.js';
import type { SlackLookups } from './slack-lookups.js';
import { mentionedUserIds, renderSlackText } from './slack-text.js';
import type { TypingReaction } from './typing-reaction.js';

/** Who the bot is, with the name its mentions become. */
export type SlackSelf = SlackBotIdentity & { readonly botName: string };

/** What a started adapter hands each event: its client, identity and handlers. */
export interface SlackConnection {
  readonly client: webApi.WebClient;
  readonly self: SlackSelf;
  readonly handlers: PlatformHandlers;
}

export interface SlackMessageEventsOptions {
  /** How many recent deliveries (`channel:ts`) are remembered. */
  readonly dedupeCapacity: number;
  readonly log: Logger;
  readonly lookups: SlackLookups;
  /** Told of each message from a person, so typing reacts to the message being answered. */
  readonly typing: TypingReaction;
}

export class SlackMessageEvents {
  readonly #seen: LruMap<string, true>;
  readonly #log: Logger;
  readonly #lookups: SlackLookups;
  readonly #typing: TypingReaction;

  constructor(options: SlackMessageEventsOptions) {
    this.#seen = new LruMap(options.dedupeCapacity);
    this.#log = options.log;
    this.#lookups = options.lookups;
    this.#typing = options.typing;
  }

  /** Handles one event; never throws (a failed handler is logged, and its retry let through). */
  async handle(connection: SlackConnection, event: unknown, retryNum: number | undefined): Promise<void> {
    const decision = readSlackMessage(event, connection.self);
    if (decision.kind === 'ignore') {
      // `channel` in a log line is Ebb's channel key; Slack's own id goes under `channelId`.
      const { kind: _kind, channel, ...fields } = decision;
      this.#log.debug(
        {
          event: 'slack.message_ignored',
          ...fields,
          ...(channel === undefined ? {} : { channelId: channel }),
        },
        'slack message ignored',
      );
      return;
    }
    if (decision.kind === 'change') {
      await this.#handleChange(connection, decision.change, retryNum);
      return;
    }
    const { message } = decision;
    const seenKey = this.#firstDelivery(message.channel, message.ts, retryNum);
    if (seenKey === undefined) return;
    try {
      const inbound = await this.#toInbound(connection, message);
      if (!inbound.fromBot)
        this.#typing.noteFromPerson(inbound.channelKey, { channel: message.channel, ts: message.ts });
      await connection.handlers.onMessage(inbound);
    } catch (err) {
      // Let a retry of this message through: it was not accepted.
      this.#seen.delete(seenKey);
      this.#log.error(
        { event: 'slack.message_failed', err, channel: message.channelKey, platformMessageId: message.ts },
        'slack message handler failed',
      );
    }
  }

  /** A deletion or edit, to `onMessageChange` when the bot takes them; a failure lets Slack's retry through. */
  async #handleChange(connection: SlackConnection, change: SlackChange, retryNum: number | undefined) {
    const onMessageChange = connection.handlers.onMessageChange?.bind(connection.handlers);
    if (!onMessageChange) {
      this.#log.debug(
        {
          event: 'slack.message_ignored',
          reason: 'no_change_handler',
          channelId: change.channel,
          ts: change.eventTs,
        },
        'slack message ignored',
      );
      return;
    }
    const seenKey = this.#firstDelivery(change.channel, change.eventTs, retryNum);
    if (seenKey === undefined) return;
    try {
      await onMessageChange(await this.#toMessageChange(connection, change));
    } catch (err) {
      this.#seen.delete(seenKey);
      this.#log.error(
        {
          event: 'slack.message_change_failed',
          err,
          channel: change.channelKey,
          kind: change.kind,
          platformMessageId: change.messageTs,
        },
        'slack message change handler failed',
      );
    }
  }

  /**
   * Remembers the delivery of `channel:ts` and returns that key (to forget it if the handler fails);
   * undefined, and logged, for a delivery seen before.
   */
  #firstDelivery(channelId: string, ts: string, retryNum: number | undefined): string | undefined {
    const seenKey = `${channelId}:${ts}`;
    if (!this.#seen.has(seenKey)) {
      this.#seen.set(seenKey, true);
      return seenKey;
    }
    this.#log.debug(
      {
        event: 'slack.message_ignored',
        reason: 'duplicate',
        channelId,
        ts,
        ...(retryNum ? { retryNum } : {}),
      },
      'slack message ignored',
    );
    return undefined;
  }

  async #toInbound(connection: SlackConnection, message: SlackMessage): Promise<InboundMessage> {
    const { client } = connection;
    const lookups = this.#lookups;
    const [authorName, direct, text] = await Promise.all([
      message.authorNameHint ?? lookups.userName(client, message.authorId),
      lookups.isDirect(client, message),
      this.#render(connection, message.text),
    ]);
    return {
      platform: 'slack',
      channelKey: message.channelKey,
      platformMessageId: message.ts,
      authorId: message.authorId,
      authorName,
      fromBot: message.fromBot,
      text,
      ts: slackTsToIso(message.ts),
      mentionsBot: message.mentionsBot,
      direct,
    };
  }

  async #toMessageChange(connection: SlackConnection, change: SlackChange): Promise<MessageChange> {
    const where = {
      platform: 'slack',
      channelKey: change.channelKey,
      ts: slackTsToIso(change.eventTs),
      ...(change.threadUnknown ? ({ threadUnknown: true } as const) : {}),
    } as const;
    switch (change.kind) {
      case 'deleted':
        return { kind: 'deleted', ...where, platformMessageIds: [change.messageTs] };
      case 'edited':
        return {
          kind: 'edited',
          ...where,
          platformMessageId: change.messageTs,
          text: await this.#render(connection, change.text),
        };
      default: {
        const exhaustive: never = change;
        throw new Error(`unknown Slack change ${String(exhaustive)}`);
      }
    }
  }

  /** Slack's markup as transcript text: this bot's mention as `@<bot name>`, other people by name. */
  async #render(connection: SlackConnection, text: string): Promise<string> {
    const { self, client } = connection;
    const mentioned = mentionedUserIds(text, self.botUserId);
    const names = await Promise.all(mentioned.map((id) => this.#lookups.userName(client, id)));
    const userNames = new Map(mentioned.map((id, i) => [id, names[i] ?? id]));
    return renderSlackText(text, { botUserId: self.botUserId, botName: self.botName, userNames });
  }
}

/** Slack's `1712345678.123456` as ISO 8601 (millisecond precision). */
export function slackTsToIso(ts: string): string {
  const seconds = Number(ts);
  return new Date(Number.isFinite(seconds) ? Math.floor(seconds * 1000) : 0).toISOString();
}
