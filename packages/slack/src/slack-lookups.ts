/**
 * What an event does not say and Slack must be asked: a user's display name (`users.info`, cached
 * for an hour, one request in flight per user) and whether a conversation is a DM
 * (`conversations.info`, cached per channel). Both are bounded, and both fall back instead of failing.
 */
import { type Logger, LruMap } from '@ebb/core';
import type { webApi } from '@slack/bolt';
import type { SlackMessage } from './read-message.js';

const NAME_TTL_MS = 60 * 60 * 1000;

export class SlackLookups {
  readonly #log: Logger;
  readonly #names = new LruMap<string, { readonly name: string; readonly at: number }>(1_000);
  readonly #pendingNames = new Map<string, Promise<string>>();
  readonly #channelTypes = new LruMap<string, string>(1_000);

  constructor(log: Logger) {
    this.#log = log;
  }

  /** A display name (never an email): display name, real name, handle, or the id when Slack fails. */
  async userName(client: webApi.WebClient, userId: string): Promise<string> {
    const cached = this.#names.get(userId);
    if (cached && Date.now() - cached.at < NAME_TTL_MS) return cached.name;
    const pending = this.#pendingNames.get(userId);
    if (pending) return pending;
    const lookup = (async () => {
      try {
        const { user } = await client.users.info({ user: userId });
        const name =
          nonEmpty(user?.profile?.display_name) ??
          nonEmpty(user?.profile?.real_name) ??
          nonEmpty(user?.real_name) ??
          nonEmpty(user?.name) ??
          userId;
        this.#names.set(userId, { name, at: Date.now() });
        return name;
      } catch (err) {
        this.#log.debug(
          { event: 'slack.user_lookup_failed', err, userId },
          'slack users.info failed; using the user id as name',
        );
        return userId;
      } finally {
        this.#pendingNames.delete(userId);
      }
    })();
    this.#pendingNames.set(userId, lookup);
    return lookup;
  }

  /** DMs are `channel_type: 'im'`; `app_mention` carries no type, so ask Slack once per channel. */
  async isDirect(client: webApi.WebClient, message: SlackMessage): Promise<boolean> {
    if (message.channelType !== undefined) return message.channelType === 'im';
    const cached = this.#channelTypes.get(message.channel);
    if (cached !== undefined) return cached === 'im';
    try {
      const { channel } = await client.conversations.info({ channel: message.channel });
      const type = channel?.is_im
        ? 'im'
        : channel?.is_mpim
          ? 'mpim'
          : channel?.is_private
            ? 'group'
            : 'channel';
      this.#channelTypes.set(message.channel, type);
      return type === 'im';
    } catch (err) {
      this.#log.debug(
        { event: 'slack.channel_lookup_failed', err, channelId: message.channel },
        'slack conversations.info failed',
      );
      return message.channel.startsWith('D');
    }
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
