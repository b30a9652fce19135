import { describe, expect, it } from 'vitest';
import { readSlackMessage } from './read-message.js';

const self = { teamId: 'T1', botUserId: 'UBOT', botId: 'BBOT' };
const base = { type: 'message', channel: 'C1', user: 'UALICE', text: 'hi', ts: '1700000000.000200' };

function deliver(event: Record<string, unknown>) {
  const decision = readSlackMessage(event, self);
  if (decision.kind !== 'deliver') throw new Error(`expected delivery, got ${JSON.stringify(decision)}`);
  return decision.message;
}

describe('readSlackMessage', () => {
  it('reads a channel message', () => {
    expect(deliver({ ...base, channel_type: 'channel' })).toEqual({
      conversation: { teamId: 'T1', channelId: 'C1' },
      channelKey: 'slack:T1:C1',
      channel: 'C1',
      ts: base.ts,
      channelType: 'channel',
      authorId: 'UALICE',
      authorNameHint: undefined,
      fromBot: false,
      text: 'hi',
      mentionsBot: false,
    });
  });

  it('puts a reply in its thread, and a thread parent in its channel', () => {
    expect(deliver({ ...base, thread_ts: '1700000000.000100' }).channelKey).toBe(
      'slack:T1:C1:1700000000.000100',
    );
    expect(deliver({ ...base, thread_ts: base.ts }).channelKey).toBe('slack:T1:C1');
    expect(deliver({ ...base, subtype: 'thread_broadcast', thread_ts: '1.1' }).channelKey).toBe(
      'slack:T1:C1:1.1',
    );
  });

  it('sees mentions of the bot in text, and in every app_mention', () => {
    expect(deliver({ ...base, text: '<@UBOT> hi' }).mentionsBot).toBe(true);
    expect(deliver({ ...base, text: '<@UBOT|ebb> hi' }).mentionsBot).toBe(true);
    expect(deliver({ ...base, text: '<@UBOTTOM> hi' }).mentionsBot).toBe(false);
    expect(deliver({ ...base, type: 'app_mention', text: 'hi' }).mentionsBot).toBe(true);
  });

  it('flags bot messages, legacy and modern', () => {
    const legacy = deliver({
      ...base,
      user: undefined,
      subtype: 'bot_message',
      bot_id: 'BOTHER',
      username: 'ci',
    });
    const modern = deliver({ ...base, user: 'UOTHER', bot_id: 'BOTHER', bot_profile: { name: 'deploybot' } });

    expect([legacy.fromBot, legacy.authorId, legacy.authorNameHint]).toEqual([true, 'BOTHER', 'ci']);
    expect([modern.fromBot, modern.authorId, modern.authorNameHint]).toEqual([true, 'UOTHER', 'deploybot']);
  });

  it('ignores its own messages, by bot id or by bot user', () => {
    expect(readSlackMessage({ ...base, user: 'UBOT', bot_id: 'BBOT' }, self)).toMatchObject({
      kind: 'ignore',
      reason: 'own_message',
    });
    expect(
      readSlackMessage({ ...base, user: undefined, subtype: 'bot_message', bot_id: 'BBOT' }, self),
    ).toMatchObject({ kind: 'ignore', reason: 'own_message' });
  });

  it.each(['message_changed', 'message_deleted', 'channel_join', 'channel_topic', 'message_replied'])(
    'ignores the %s subtype',
    (subtype) => {
      expect(readSlackMessage({ ...base, subtype }, self)).toEqual({
        kind: 'ignore',
        reason: 'unsupported_subtype',
        channel: 'C1',
        ts: base.ts,
        subtype,
      });
    },
  );

  it.each([
    null,
    'text',
    {},
    { ...base, type: 'reaction_added' },
    { ...base, channel: undefined },
    { ...base, ts: '' },
  ])('ignores malformed event %#', (event) => {
    expect(readSlackMessage(event, self)).toMatchObject({ kind: 'ignore', reason: 'malformed' });
  });
});
