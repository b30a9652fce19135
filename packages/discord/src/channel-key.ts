/**
 * Discord channel keys: `discord:<guild>:<channel>` for a guild text channel or a thread (a thread
 * is a channel with its own id), `discord:dm:<channel>` for a direct message.
 */
import { EbbError } from '@ebb/core';

export interface DiscordChannelRef {
  /** Null for a DM. */
  readonly guildId: string | null;
  readonly channelId: string;
}

const KEY = /^discord:(dm|\d{1,20}):(\d{1,20})$/;

export function discordChannelKey(guildId: string | null, channelId: string): string {
  return `discord:${guildId ?? 'dm'}:${channelId}`;
}

/** Parses a key built by `discordChannelKey`; throws `invalid_channel_key` for anything else. */
export function parseDiscordChannelKey(key: string): DiscordChannelRef {
  const match = KEY.exec(key);
  if (!match?.[1] || !match[2]) {
    throw new EbbError(`not a Discord channel key: ${JSON.stringify(key)}`, { code: 'invalid_channel_key' });
  }
  return { guildId: match[1] === 'dm' ? null : match[1], channelId: match[2] };
}
