/**
 * The conversation a message change is in, when discord.js does not know its channel. discord.js
 * drops a MESSAGE_DELETE, MESSAGE_DELETE_BULK or MESSAGE_UPDATE in a channel missing from its cache:
 * the dispatches carry no channel type to build one from. Two kinds of channel are missing:
 *
 * - a DM not seen since the client started (DMs are announced by their first message): its key
 *   needs only the channel id, so it is built from the dispatch;
 * - a guild channel no GUILD_CREATE carried, in practice an archived thread (GUILD_CREATE lists the
 *   active ones only, so after a restart every archived thread is unknown): a thread's key holds its
 *   parent, which no dispatch names, so Discord is asked (`GET /channels/{id}`).
 *
 * The answer is not cached here. `client.channels.fetch` puts the channel in discord.js's own cache,
 * so the next change in that thread (and a new message in it) takes discord.js's path with the
 * parent known, and discord.js's thread sweeper drops an archived thread from that cache after a few
 * hours, which bounds it. Asks for one channel made while one is in flight share it: one request for a
 * burst (a member deleting several messages, a RESUME's replay), and the changes are reported in the
 * order they came. A failed ask (404: gone, 403: no access, the network) is not remembered either: a
 * replay of the dispatch asks again.
 */
import { LruMap } from '@ebb/core';
import type { Client } from 'discord.js';
import { discordChannelKey } from './channel-key.js';
import { DiscordError, toEbbError } from './discord-errors.js';

/** Where a dispatch happened, as far as discord.js is concerned. */
export type DispatchChannel =
  /** discord.js knows the channel and reports the change itself. */
  | { readonly kind: 'known' }
  /** A DM discord.js has not seen: keyed from the dispatch. */
  | { readonly kind: 'unknown_dm'; readonly channelKey: string }
  /** A guild channel or thread discord.js has not seen: Discord is asked what it is. */
  | { readonly kind: 'unknown_guild_channel'; readonly guildId: string; readonly channelId: string };

/** Decides where a dispatch happened; `known` says whether discord.js has the channel in its cache. */
export function dispatchChannel(
  data: { readonly channel_id: string; readonly guild_id?: string },
  known: (channelId: string) => boolean,
): DispatchChannel {
  if (known(data.channel_id)) return { kind: 'known' };
  return data.guild_id === undefined
    ? { kind: 'unknown_dm', channelKey: discordChannelKey(null, data.channel_id) }
    : { kind: 'unknown_guild_channel', guildId: data.guild_id, channelId: data.channel_id };
}

/** Asks in flight at once, at most; past it an ask is made again (one more request, nothing lost). */
const PENDING_LOOKUPS = 100;

/** Asks Discord for the key of a channel discord.js does not know. */
export class ChannelKeyLookup {
  readonly #client: Client;
  readonly #pending = new LruMap<string, Promise<string>>(PENDING_LOOKUPS);

  constructor(client: Client) {
    this.#client = client;
  }

  /**
   * The key a new message in `channelId` gets (`messageChannelKey`): a thread under its parent.
   * Rejects with a `DiscordError`: `discord_not_found` (the channel is gone), `discord_forbidden`
   * (the bot may not see it), `discord_channel_unknown` (discord.js cannot build what Discord
   * described), or what else the request met.
   */
  keyOf(channelId: string): Promise<string> {
    const pending = this.#pending.get(channelId);
    if (pending) return pending;
    const lookup = this.#fetchKey(channelId).finally(() => {
      if (this.#pending.get(channelId) === lookup) this.#pending.delete(channelId);
    });
    this.#pending.set(channelId, lookup);
    return lookup;
  }

  async #fetchKey(channelId: string): Promise<string> {
    const doing = `find channel ${channelId}`;
    let channel: Awaited<ReturnType<Client['channels']['fetch']>>;
    try {
      channel = await this.#client.channels.fetch(channelId);
    } catch (err) {
      throw toEbbError(err, { doing });
    }
    // discord.js builds no channel for a guild it does not have or a type it does not know.
    if (!channel) {
      throw new DiscordError(`could not ${doing}: discord.js cannot build the channel Discord described`, {
        code: 'discord_channel_unknown',
      });
    }
    return discordChannelKey(
      channel.isDMBased() ? null : channel.guildId,
      channel.id,
      channel.isThread() ? channel.parentId : null,
    );
  }
}
