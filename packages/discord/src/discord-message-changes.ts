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
 * the whole message. It drops a change in a channel it does not know: a DM not seen since the client
 * started, and a thread no GUILD_CREATE carried (an archived one, so every archived thread after a
 * restart). Those are read from the gateway dispatch itself and keyed by `channel-lookup.ts`, a DM's
 * from its channel id, a thread's from what Discord says it is (`GET /channels/{id}`, for its parent,
 * asked again after a failure that may pass); when Discord cannot say (404, 403, or the network or a
 * 5xx on every try) the change is dropped and logged at warn (`discord.message_change_dropped`, with
 * the reason and the tries). Changes in one channel are reported in the order they came, including
 * one discord.js reports itself after learning of the thread while its lookup was still trying. A
 * RESUME may replay a dispatch: each deleted id and each edit (id and timestamp) is reported once,
 * whichever path it came by.
 */
import { type Logger, LruMap, type MessageChange, type PlatformHandlers } from '@ebb/core';
import {
  type Client,
  Events,
  GatewayDispatchEvents,
  type GatewayMessageDeleteBulkDispatchData,
  type GatewayMessageDeleteDispatchData,
  type GatewayMessageUpdateDispatchData,
  type Message,
  type PartialMessage,
} from 'discord.js';
import { rewriteBotMentions } from './bot-mentions.js';
import { discordChannelKey } from './channel-key.js';
import {
  ChannelKeyLookup,
  type ChannelLookupRetry,
  type DispatchChannel,
  dispatchChannel,
} from './channel-lookup.js';
import { settle } from './settle.js';

export interface DiscordMessageChangesOptions {
  readonly log: Logger;
  /** How many deleted ids and edits are remembered to drop gateway replays. */
  readonly recent: number;
  /** Mentions of the bot become `@<botName>`; by default the bot user's display name. */
  readonly botName: string | undefined;
  /** How a failed lookup of an unknown thread is tried again (`DEFAULT_CHANNEL_LOOKUP_RETRY`). */
  readonly lookupRetry?: Partial<ChannelLookupRetry> | undefined;
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
  readonly #lookupRetry: Partial<ChannelLookupRetry> | undefined;
  /** Ends the lookups' waits when the client stops; one per `listen`. */
  #stopping = new AbortController();

  constructor(options: DiscordMessageChangesOptions) {
    this.#log = options.log;
    this.#seen = new LruMap(options.recent);
    this.#botName = options.botName;
    this.#lookupRetry = options.lookupRetry;
  }

  /** Reports the client's deletions and edits to `handlers`, if it takes them. */
  listen(client: Client, handlers: PlatformHandlers): void {
    if (!handlers.onMessageChange) return;
    this.#stopping = new AbortController();
    const report = (change: MessageChange, seenKeys: readonly string[]) =>
      this.#report(handlers, change, seenKeys);
    const lookup = new ChannelKeyLookup({
      client,
      retry: this.#lookupRetry,
      signal: this.#stopping.signal,
    });
    // A change discord.js reports in a channel still being looked up (it learnt of the thread from a
    // THREAD_UPDATE while the lookup waited to try again) waits behind the changes that came first.
    const inOrder = (channelId: string, apply: () => void) => {
      const pending = lookup.inFlight(channelId);
      if (pending) void pending.then(apply);
      else apply();
    };
    client.on(Events.MessageDelete, (message) => {
      inOrder(message.channelId, () => this.#deleted(report, messageChannelKey(message), [message.id]));
    });
    client.on(Events.MessageBulkDelete, (messages, channel) => {
      const key = discordChannelKey(
        channel.guildId,
        channel.id,
        channel.isThread() ? channel.parentId : null,
      );
      inOrder(channel.id, () => this.#deleted(report, key, [...messages.keys()]));
    });
    client.on(Events.MessageUpdate, (_old, message) => {
      const edit: Edit = {
        id: message.id,
        channelKey: messageChannelKey(message),
        authorId: message.author?.id,
        content: message.content,
        editedAt: message.editedTimestamp,
      };
      inOrder(message.channelId, () => this.#edited(report, client, edit));
    });
    // Emitted before discord.js handles the dispatch, so its cache is as the handler will find it:
    // what it will drop is reported from here.
    const where = (data: DispatchData) => dispatchChannel(data, (id) => client.channels.cache.has(id));
    client.ws.on(GatewayDispatchEvents.MessageDelete, (data: GatewayMessageDeleteDispatchData) => {
      this.#inUnknownChannel(where(data), lookup, { kind: 'deleted', ids: [data.id] }, (key) =>
        this.#deleted(report, key, [data.id]),
      );
    });
    client.ws.on(GatewayDispatchEvents.MessageDeleteBulk, (data: GatewayMessageDeleteBulkDispatchData) => {
      this.#inUnknownChannel(where(data), lookup, { kind: 'deleted', ids: data.ids }, (key) =>
        this.#deleted(report, key, data.ids),
      );
    });
    client.ws.on(GatewayDispatchEvents.MessageUpdate, (data: GatewayMessageUpdateDispatchData) => {
      this.#inUnknownChannel(where(data), lookup, { kind: 'edited', ids: [data.id] }, (key) =>
        this.#edited(report, client, {
          id: data.id,
          channelKey: key,
          authorId: data.author?.id,
          content: typeof data.content === 'string' ? data.content : null,
          editedAt: data.edited_timestamp ? Date.parse(data.edited_timestamp) : null,
        }),
      );
    });
  }

  /** Ends the lookups' waits: a change waiting for one is dropped with the last try's reason. */
  stop(): void {
    this.#stopping.abort();
  }

  /**
   * Calls `apply` with the key of a change discord.js will drop (its channel is one it does not
   * know); does nothing for one it reports itself. A thread's key is asked of Discord; when that
   * fails, on the last try or at once when Discord refused, the change is dropped, logged with why
   * and after how many tries.
   */
  #inUnknownChannel(
    where: DispatchChannel,
    lookup: ChannelKeyLookup,
    change: { readonly kind: MessageChange['kind']; readonly ids: readonly string[] },
    apply: (channelKey: string) => void,
  ): void {
    switch (where.kind) {
      case 'known':
        return;
      case 'unknown_dm':
        apply(where.channelKey);
        return;
      case 'unknown_guild_channel':
        void lookup.keyOf(where.channelId).then((found) => {
          if (found.ok) {
            apply(found.channelKey);
            return;
          }
          this.#log.warn(
            {
              event: 'discord.message_change_dropped',
              reason: found.error.code,
              err: found.error,
              tries: found.tries,
              guildId: where.guildId,
              channelId: where.channelId,
              kind: change.kind,
              messageIds: change.ids,
            },
            'discord message change dropped: its channel could not be looked up',
          );
        });
        return;
      default: {
        const exhaustive: never = where;
        throw new Error(`unknown dispatch channel ${String(exhaustive)}`);
      }
    }
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
    settle(async () => {
      await handlers.onMessageChange?.(change);
    }).catch((err: unknown) => {
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

/** The fields of a message-change dispatch that say where it happened. */
type DispatchData = { readonly channel_id: string; readonly guild_id?: string };

/** The key of the conversation a message is in: a thread is keyed under its channel. */
export function messageChannelKey(message: Message | PartialMessage): string {
  const channel = message.channel;
  return discordChannelKey(message.guildId, message.channelId, channel.isThread() ? channel.parentId : null);
}
