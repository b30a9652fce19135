/**
 * Discord channel keys: `discord:<guild>:<channel>` for a guild text channel,
 * `discord:<guild>:<channel>:<thread>` for a thread in it (as Slack threads, so a
 * `[channels."discord:G:C*"]` block and the channel's memory scope cover its threads), and
 * `discord:dm:<channel>` for a direct message.
 */
import { DiscordError } from './discord-errors.js';

export interface DiscordChannelRef {
  /** Null for a DM. */
  readonly guildId: string | null;
  /** The channel to post in: the thread itself for a thread. */
  readonly channelId: string;
  /** For a thread, the channel it belongs to. */
  readonly parentId?: string;
}

const KEY = /^discord:(?:dm|(\d{1,20})):(\d{1,20})(?::(\d{1,20}))?$/;

export function discordChannelKey(
  guildId: string | null,
  channelId: string,
  parentId?: string | null,
): string {
  return parentId
    ? `discord:${guildId ?? 'dm'}:${parentId}:${channelId}`
    : `discord:${guildId ?? 'dm'}:${channelId}`;
}

/** Parses a key built by `discordChannelKey`; throws `invalid_channel_key` for anything else. */
export function parseDiscordChannelKey(key: string): DiscordChannelRef {
  const match = KEY.exec(key);
  if (!match?.[2]) {
    throw new DiscordError(`not a Discord channel key: ${JSON.stringify(key)}`, {
      code: 'invalid_channel_key',
    });
  }
  const guildId = match[1] ?? null;
  // A DM has no threads.
  if (match[3] && guildId === null) {
    throw new DiscordError(`not a Discord channel key: ${JSON.stringify(key)}`, {
      code: 'invalid_channel_key',
    });
  }
  return match[3] ? { guildId, channelId: match[3], parentId: match[2] } : { guildId, channelId: match[2] };
}
