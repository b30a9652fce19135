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

  it.each(['channel_join', 'channel_topic', 'message_replied', 'pinned_item'])(
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
});

describe('readSlackMessage on deletions and edits', () => {
  const eventTs = '1700000099.000900';
  const reply = { ...base, ts: '1700000000.000300', thread_ts: '1700000000.000100' };
  const deleted = (previous: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) => ({
    type: 'message',
    subtype: 'message_deleted',
    channel: 'C1',
    hidden: true,
    deleted_ts: previous?.ts,
    ts: eventTs,
    event_ts: eventTs,
    channel_type: 'channel',
    ...(previous ? { previous_message: previous } : {}),
    ...extra,
  });
  const changed = (previous: Record<string, unknown> | undefined, message: Record<string, unknown>) => ({
    type: 'message',
    subtype: 'message_changed',
    channel: 'C1',
    hidden: true,
    message,
    ...(previous ? { previous_message: previous } : {}),
    ts: eventTs,
    event_ts: eventTs,
    channel_type: 'channel',
  });
  const edit = (original: Record<string, unknown>, text: string) => ({
    ...original,
    text,
    edited: { user: original.user, ts: eventTs },
  });

  it('reads a deletion as the ts it names, in the channel, or in the thread the message was in', () => {
    // No thread_ts anywhere: the channel, a guess (the bot looks in its threads when it holds no such ts).
    expect(readSlackMessage(deleted(base), self)).toEqual({
      kind: 'change',
      change: {
        kind: 'deleted',
        channelKey: 'slack:T1:C1',
        channel: 'C1',
        eventTs,
        messageTs: base.ts,
        threadUnknown: true,
      },
    });
    expect(readSlackMessage(deleted(reply), self)).toEqual({
      kind: 'change',
      change: {
        kind: 'deleted',
        channelKey: 'slack:T1:C1:1700000000.000100',
        channel: 'C1',
        eventTs,
        messageTs: reply.ts,
      },
    });
    // Without previous_message, deleted_ts names the message and a top-level thread_ts the thread.
    expect(
      readSlackMessage(deleted(undefined, { deleted_ts: reply.ts, thread_ts: reply.thread_ts }), self),
    ).toEqual({
      kind: 'change',
      change: {
        kind: 'deleted',
        channelKey: 'slack:T1:C1:1700000000.000100',
        channel: 'C1',
        eventTs,
        messageTs: reply.ts,
      },
    });
  });

  it('names the channel and says the thread is unknown when nothing in the event carries thread_ts', () => {
    // A reply's deletion with neither previous_message nor thread_ts: only deleted_ts names it.
    expect(readSlackMessage(deleted(undefined, { deleted_ts: reply.ts }), self)).toEqual({
      kind: 'change',
      change: {
        kind: 'deleted',
        channelKey: 'slack:T1:C1',
        channel: 'C1',
        eventTs,
        messageTs: reply.ts,
        threadUnknown: true,
      },
    });
    // An edit of it whose message lost its thread_ts, without previous_message.
    const { thread_ts: _thread, ...bareReply } = reply;
    expect(readSlackMessage(changed(undefined, edit(bareReply, 'fixed')), self)).toEqual({
      kind: 'change',
      change: {
        kind: 'edited',
        channelKey: 'slack:T1:C1',
        channel: 'C1',
        eventTs,
        messageTs: reply.ts,
        text: 'fixed',
        threadUnknown: true,
      },
    });
    // A tombstone without thread info.
    const tombstone = {
      type: 'message',
      subtype: 'tombstone',
      text: 'This message was deleted.',
      ts: reply.ts,
    };
    expect(readSlackMessage(changed(undefined, tombstone), self)).toMatchObject({
      change: { kind: 'deleted', channelKey: 'slack:T1:C1', messageTs: reply.ts, threadUnknown: true },
    });
    // Any one of them naming the thread is enough: the thread is known.
    for (const event of [
      changed(undefined, edit(reply, 'fixed')),
      changed(reply, edit(bareReply, 'fixed')),
      { ...changed(undefined, edit(bareReply, 'fixed')), thread_ts: reply.thread_ts },
    ]) {
      const decision = readSlackMessage(event, self);
      expect(decision).toMatchObject({ change: { channelKey: 'slack:T1:C1:1700000000.000100' } });
      expect(decision.kind === 'change' && decision.change).not.toHaveProperty('threadUnknown');
    }
  });

  it("reads a deletion of this bot's own reply too: an admin took it back", () => {
    const own = { ...base, user: 'UBOT', bot_id: 'BBOT' };

    expect(readSlackMessage(deleted(own), self)).toMatchObject({
      kind: 'change',
      change: { kind: 'deleted', messageTs: own.ts },
    });
  });

  it('reads a thread parent turned tombstone as its deletion, in the channel', () => {
    const parent = { ...base, thread_ts: base.ts, reply_count: 2 };
    const tombstone = {
      type: 'message',
      subtype: 'tombstone',
      text: 'This message was deleted.',
      user: 'USLACKBOT',
      hidden: true,
      ts: base.ts,
      thread_ts: base.ts,
      reply_count: 2,
    };

    expect(readSlackMessage(changed(parent, tombstone), self)).toEqual({
      kind: 'change',
      change: { kind: 'deleted', channelKey: 'slack:T1:C1', channel: 'C1', eventTs, messageTs: base.ts },
    });
  });

  it('reads an edit as the new raw text under the original ts, in its thread', () => {
    expect(readSlackMessage(changed(base, edit(base, 'hi <@UBOT>')), self)).toEqual({
      kind: 'change',
      change: {
        kind: 'edited',
        channelKey: 'slack:T1:C1',
        channel: 'C1',
        eventTs,
        messageTs: base.ts,
        text: 'hi <@UBOT>',
        threadUnknown: true,
      },
    });
    expect(readSlackMessage(changed(reply, edit(reply, 'fixed')), self)).toMatchObject({
      change: { kind: 'edited', channelKey: 'slack:T1:C1:1700000000.000100', messageTs: reply.ts },
    });
  });

  it('ignores a change that kept the text (an unfurl, a reply count), and one to its own reply', () => {
    const unfurled = { ...base, attachments: [{ from_url: 'https://example.com' }] };
    const own = { ...base, user: 'UBOT', bot_id: 'BBOT' };

    expect(readSlackMessage(changed(base, unfurled), self)).toEqual({
      kind: 'ignore',
      reason: 'unchanged',
      channel: 'C1',
      ts: eventTs,
      subtype: 'message_changed',
    });
    // Without previous_message, only an `edited` stamp says the words changed.
    expect(readSlackMessage(changed(undefined, unfurled), self)).toMatchObject({ reason: 'unchanged' });
    expect(readSlackMessage(changed(undefined, edit(base, 'new')), self)).toMatchObject({ kind: 'change' });
    expect(readSlackMessage(changed(own, edit(own, 'reworded')), self)).toMatchObject({
      kind: 'ignore',
      reason: 'own_message',
    });
  });

  it('ignores a change that names no message', () => {
    expect(readSlackMessage(deleted(undefined), self)).toMatchObject({ kind: 'ignore', reason: 'malformed' });
    expect(readSlackMessage(changed(base, { text: 'no ts' }), self)).toMatchObject({
      kind: 'ignore',
      reason: 'malformed',
    });
  });
});

describe('readSlackMessage on malformed events', () => {
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
