import { describe, expect, it } from 'vitest';
import { discordChannelKey, parseDiscordChannelKey } from './channel-key.js';

describe('Discord channel keys', () => {
  it('builds guild, thread and DM keys and parses them back', () => {
    expect(discordChannelKey('111', '222')).toBe('discord:111:222');
    expect(discordChannelKey(null, '333')).toBe('discord:dm:333');
    expect(parseDiscordChannelKey('discord:111:222')).toEqual({ guildId: '111', channelId: '222' });
    expect(parseDiscordChannelKey('discord:dm:333')).toEqual({ guildId: null, channelId: '333' });
    expect(discordChannelKey('111', '444', '222')).toBe('discord:111:222:444');
    expect(parseDiscordChannelKey('discord:111:222:444')).toEqual({
      guildId: '111',
      channelId: '444',
      parentId: '222',
    });
  });

  it.each(['slack:T1:C1', 'discord:111', 'discord:111:abc', 'discord:dm:1:2', ''])('rejects %j', (key) => {
    expect(() => parseDiscordChannelKey(key)).toThrow(
      expect.objectContaining({ code: 'invalid_channel_key' }),
    );
  });
});
