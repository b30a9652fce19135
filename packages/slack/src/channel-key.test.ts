import { describe, expect, it } from 'vitest';
import { parseSlackChannelKey, slackChannelKey } from './channel-key.js';

describe('Slack channel keys', () => {
  it('names a channel, and a thread inside it', () => {
    expect(slackChannelKey({ teamId: 'T1', channelId: 'C1' })).toBe('slack:T1:C1');
    expect(slackChannelKey({ teamId: 'T1', channelId: 'C1', threadTs: '1700000000.000100' })).toBe(
      'slack:T1:C1:1700000000.000100',
    );
  });

  it('parses its own keys back', () => {
    for (const conversation of [
      { teamId: 'T1', channelId: 'C1' },
      { teamId: 'T0EBBTEAM', channelId: 'D0ALICE01', threadTs: '1700000000.000100' },
    ]) {
      expect(parseSlackChannelKey(slackChannelKey(conversation))).toEqual(conversation);
    }
  });

  it.each([
    'discord:1:2',
    'slack:T1',
    'slack::C1',
    'slack:T1:C1:not-a-ts',
    'slack:T1:C1:1.2:extra',
    'slack:t1:c1',
    '',
  ])('rejects %j', (key) => {
    expect(parseSlackChannelKey(key)).toBeUndefined();
  });
});
