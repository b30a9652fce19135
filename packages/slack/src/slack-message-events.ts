/**
 * Slack's `message` and `app_mention` events, carried to `onMessage`. Both are handled, and a
 * bounded LRU of `channel:ts` drops the second delivery of a message: the `app_mention` twin of a
 * `message` event, and Slack's retries (`x-slack-retry-num` / `retry_attempt`), which carry the same
 * `ts`. Listening to both keeps the bot working for an app subscribed only to `app_mention` (fewer
 * scopes), and the LRU is needed for retries anyway. Every dropped event leaves a
 * `slack.message_ignored` log line.
 */
import { type InboundMessage, type Logger, LruMap, type PlatformHandlers } from '@ebb/core';
import type { webApi } from '@slack/bolt';
import { readSlackMessage, type SlackBotIdentity, type SlackMessage } from './read-message.js';
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
    const { message } = decision;
    const seenKey = `${message.channel}:${message.ts}`;
    if (this.#seen.has(seenKey)) {
      this.#log.debug(
        {
          event: 'slack.message_ignored',
          reason: 'duplicate',
          channelId: message.channel,
          ts: message.ts,
          ...(retryNum ? { retryNum } : {}),
        },
        'slack message ignored',
      );
      return;
    }
    this.#seen.set(seenKey, true);
    try {
      const inbound = await this.#toInbound(connection, message);
      if (!inbound.fromBot)
        this.#typing.noteFromPerson(inbound.channelKey, { channel: message.channel, ts: message.ts });
      await connection.handlers.onMessage(inbound);
    } catch (err) {
      // Let a retry of this message through: it was not accepted.
      this.#seen.delete(seenKey);
      this.#log.error(
        { err, channel: message.channelKey, platformMessageId: message.ts },
        'slack message handler failed',
      );
    }
  }

  async #toInbound(connection: SlackConnection, message: SlackMessage): Promise<InboundMessage> {
    const { self, client } = connection;
    const lookups = this.#lookups;
    const mentioned = mentionedUserIds(message.text, self.botUserId);
    const [authorName, direct, ...names] = await Promise.all([
      message.authorNameHint ?? lookups.userName(client, message.authorId),
      lookups.isDirect(client, message),
      ...mentioned.map((id) => lookups.userName(client, id)),
    ]);
    const userNames = new Map(mentioned.map((id, i) => [id, names[i] ?? id]));
    return {
      platform: 'slack',
      channelKey: message.channelKey,
      platformMessageId: message.ts,
      authorId: message.authorId,
      authorName,
      fromBot: message.fromBot,
      text: renderSlackText(message.text, { botUserId: self.botUserId, botName: self.botName, userNames }),
      ts: slackTsToIso(message.ts),
      mentionsBot: message.mentionsBot,
      direct,
    };
  }
}

/** Slack's `1712345678.123456` as ISO 8601 (millisecond precision). */
export function slackTsToIso(ts: string): string {
  const seconds = Number(ts);
  return new Date(Number.isFinite(seconds) ? Math.floor(seconds * 1000) : 0).toISOString();
}
