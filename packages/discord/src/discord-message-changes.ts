/**
 * Deletions and edits on Discord, carried to `onMessageChange` under the message's snowflake (the id
 * it was archived under) and the key of the conversation it is in, built as for a new message:
 *
 * - `MessageDelete` and `MessageBulkDelete` (a moderator's purge): deleted, whoever wrote the
 *   message. This bot's own replies are reported too: a moderator took them back.
 * - `MessageUpdate`: an edit when the payload carries content and an `edited_timestamp`. Discord also
 *   sends MESSAGE_UPDATE for unfurled embeds, pins and flags, with the timestamp as it was (or, in
 *   older payloads, without content): not reported. Edits of this bot's own messages are not either
 *   (Ebb never edits its replies).
 *
 * The adapter keeps no messages in its cache, so discord.js reports these with `Partials.Message`:
 * a partial deleted message (its id), and an edited one patched from the gateway payload, which holds
 * the whole message. It drops a change in a channel it does not know, and a DM channel is unknown
 * until a message arrives in it, so after every restart: MESSAGE_DELETE and MESSAGE_UPDATE carry no
 * channel type to build one from. Those are read from the gateway dispatch itself (a DM's key needs
 * only its channel id). A RESUME may replay a dispatch: each deleted id and each edit (id and
 * timestamp) is reported once.
 */
import { type Logger, LruMap, type MessageChange, type PlatformHandlers } from '@ebb/core';
import {
  type Client,
  Events,
  GatewayDispatchEvents,
  type GatewayMessageDeleteDispatchData,
  type GatewayMessageUpdateDispatchData,
  type Message,
  type PartialMessage,
} from 'discord.js';
import { rewriteBotMentions } from './bot-mentions.js';
import { discordChannelKey } from './channel-key.js';
import { settle } from './settle.js';

export interface DiscordMessageChangesOptions {
  readonly log: Logger;
  /** How many deleted ids and edits are remembered to drop gateway replays. */
  readonly recent: number;
  /** Mentions of the bot become `@<botName>`; by default the bot user's display name. */
  readonly botName: string | undefined;
}

/** An edit as read from discord.js or from the gateway payload. */
interface Edit {
  readonly id: string;
  readonly channelKey: string;
  readonly authorId: string | undefined;
  /** Null when the payload carried none. */
  readonly content: string | null;
  /** Epoch ms; null for a message never edited by its author. */
  readonly editedAt: number | null;
}

type IgnoreReason = 'duplicate' | 'own_message' | 'unchanged';

export class DiscordMessageChanges {
  readonly #log: Logger;
  readonly #seen: LruMap<string, true>;
  readonly #botName: string | undefined;

  constructor(options: DiscordMessageChangesOptions) {
    this.#log = options.log;
    this.#seen = new LruMap(options.recent);
    this.#botName = options.botName;
  }

  /** Reports the client's deletions and edits to `handlers`, if it takes them. */
  listen(client: Client, handlers: PlatformHandlers): void {
    if (!handlers.onMessageChange) return;
    const report = (change: MessageChange, seenKeys: readonly string[]) =>
      this.#report(handlers, change, seenKeys);
    client.on(Events.MessageDelete, (message) => {
      this.#deleted(report, messageChannelKey(message), [message.id]);
    });
    client.on(Events.MessageBulkDelete, (messages, channel) => {
      const key = discordChannelKey(
        channel.guildId,
        channel.id,
        channel.isThread() ? channel.parentId : null,
      );
      this.#deleted(report, key, [...messages.keys()]);
    });
    client.on(Events.MessageUpdate, (_old, message) => {
      this.#edited(report, client, {
        id: message.id,
        channelKey: messageChannelKey(message),
        authorId: message.author?.id,
        content: message.content,
        editedAt: message.editedTimestamp,
      });
    });
    // Emitted before discord.js handles the dispatch, so its cache is as the handler will find it.
    client.ws.on(GatewayDispatchEvents.MessageDelete, (data: GatewayMessageDeleteDispatchData) => {
      if (!unknownDm(client, data)) return;
      this.#deleted(report, discordChannelKey(null, data.channel_id), [data.id]);
    });
    client.ws.on(GatewayDispatchEvents.MessageUpdate, (data: GatewayMessageUpdateDispatchData) => {
      if (!unknownDm(client, data)) return;
      this.#edited(report, client, {
        id: data.id,
        channelKey: discordChannelKey(null, data.channel_id),
        authorId: data.author?.id,
        content: typeof data.content === 'string' ? data.content : null,
        editedAt: data.edited_timestamp ? Date.parse(data.edited_timestamp) : null,
      });
    });
  }

  #deleted(report: Report, channelKey: string, ids: readonly string[]): void {
    const fresh = ids.filter((id) => !this.#seen.has(`deleted:${id}`));
    if (fresh.length === 0) {
      this.#ignored('duplicate', channelKey, ids[0]);
      return;
    }
    const seenKeys = fresh.map((id) => `deleted:${id}`);
    for (const key of seenKeys) this.#seen.set(key, true);
    report(
      {
        kind: 'deleted',
        platform: 'discord',
        channelKey,
        platformMessageIds: fresh,
        ts: new Date().toISOString(),
      },
      seenKeys,
    );
  }

  #edited(report: Report, client: Client, edit: Edit): void {
    const bot = client.user;
    if (!bot) return;
    if (edit.authorId === bot.id) {
      this.#ignored('own_message', edit.channelKey, edit.id);
      return;
    }
    if (edit.content === null || edit.editedAt === null) {
      this.#ignored('unchanged', edit.channelKey, edit.id);
      return;
    }
    const seenKey = `edited:${edit.id}:${edit.editedAt}`;
    if (this.#seen.has(seenKey)) {
      this.#ignored('duplicate', edit.channelKey, edit.id);
      return;
    }
    this.#seen.set(seenKey, true);
    report(
      {
        kind: 'edited',
        platform: 'discord',
        channelKey: edit.channelKey,
        platformMessageId: edit.id,
        text: rewriteBotMentions(edit.content, bot.id, this.#botName ?? bot.displayName),
        ts: new Date(edit.editedAt).toISOString(),
      },
      [seenKey],
    );
  }

  #report(handlers: PlatformHandlers, change: MessageChange, seenKeys: readonly string[]): void {
    settle(() => handlers.onMessageChange?.(change) ?? Promise.resolve()).catch((err: unknown) => {
      // Not applied: a replay of the dispatch may try again.
      for (const key of seenKeys) this.#seen.delete(key);
      this.#log.error(
        { event: 'discord.message_change_failed', err, channel: change.channelKey, kind: change.kind },
        'discord message change handler failed',
      );
    });
  }

  #ignored(reason: IgnoreReason, channelKey: string, messageId: string | undefined): void {
    this.#log.debug(
      { event: 'discord.message_change_ignored', reason, channel: channelKey, messageId },
      'discord message change ignored',
    );
  }
}

type Report = (change: MessageChange, seenKeys: readonly string[]) => void;

/** The key of the conversation a message is in: a thread is keyed under its channel. */
export function messageChannelKey(message: Message | PartialMessage): string {
  const channel = message.channel;
  return discordChannelKey(message.guildId, message.channelId, channel.isThread() ? channel.parentId : null);
}

/** A DM dispatch discord.js will drop: it has not seen the channel since it started. */
function unknownDm(
  client: Client,
  data: { readonly channel_id: string; readonly guild_id?: string },
): boolean {
  return data.guild_id === undefined && !client.channels.cache.has(data.channel_id);
}
