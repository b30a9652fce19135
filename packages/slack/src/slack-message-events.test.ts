/**
 * Message events through the SlackAdapter, in both modes: what `onMessage` and `onMessageChange`
 * receive, and what is dropped (duplicates, retries, its own messages, unfurls) with the log line that
 * says why.
 */
import { FAKE_SLACK } from '@ebb/testing/slack';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ALICE_DM,
  GENERAL,
  type Harness,
  startHarness,
  stopHarnesses,
  TEAM,
} from '../test/slack-adapter-harness.js';
import { slackTsToIso } from './slack-message-events.js';

afterEach(stopHarnesses);

describe.each(['socket', 'http'] as const)('SlackAdapter in %s mode', (mode) => {
  let h: Harness;

  beforeEach(async () => {
    h = await startHarness(mode);
  });

  it('delivers a channel message with its channel key, author and time', async () => {
    const event = h.slack.build.channelMessage({ text: 'deploy is at 5pm & not later' });

    await h.deliver(event);

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(h.handlers.messages[0]).toEqual({
      platform: 'slack',
      channelKey: `slack:${TEAM}:${GENERAL}`,
      platformMessageId: event.ts,
      authorId: FAKE_SLACK.users.alice,
      authorName: 'Alice',
      fromBot: false,
      text: 'deploy is at 5pm & not later',
      ts: new Date(Math.floor(Number(event.ts) * 1000)).toISOString(),
      mentionsBot: false,
      direct: false,
    });
  });

  it('gives a thread reply its own thread key', async () => {
    const parent = h.slack.build.channelMessage({ text: 'parent' });
    const reply = h.slack.build.threadReply({ text: 'in the thread', threadTs: String(parent.ts) });

    await h.deliver(reply);

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(h.handlers.messages[0]).toMatchObject({
      channelKey: `slack:${TEAM}:${GENERAL}:${parent.ts}`,
      platformMessageId: reply.ts,
      direct: false,
    });
  });

  it('keeps a thread parent (thread_ts equal to ts) in the channel conversation', async () => {
    const ts = h.slack.build.channelMessage({ text: 'x' }).ts;
    const parent = h.slack.build.channelMessage({ text: 'parent', ...(ts ? { ts, threadTs: ts } : {}) });

    await h.deliver(parent);

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(h.handlers.messages[0]?.channelKey).toBe(`slack:${TEAM}:${GENERAL}`);
  });

  it('marks a DM as direct', async () => {
    await h.deliver(h.slack.build.directMessage({ text: 'psst' }));

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(h.handlers.messages[0]).toMatchObject({
      channelKey: `slack:${TEAM}:${ALICE_DM}`,
      direct: true,
      mentionsBot: false,
    });
  });

  it('keeps a group DM a conversation like a channel: not direct, so answered on a mention', async () => {
    const groupDm = FAKE_SLACK.channels.groupDm;
    await h.deliver(h.slack.build.channelMessage({ text: 'lunch?', channel: groupDm }));
    await h.deliver(
      h.slack.build.channelMessage({ text: `${h.slack.build.mention()} lunch?`, channel: groupDm }),
    );

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(2));
    expect(h.handlers.messages.map((m) => [m.channelKey, m.direct, m.mentionsBot])).toEqual([
      [`slack:${TEAM}:${groupDm}`, false, false],
      [`slack:${TEAM}:${groupDm}`, false, true],
    ]);
  });

  it('falls back when Slack cannot say who wrote it or what the conversation is', async () => {
    h.slack.fail('users.info', 'user_not_found').fail('conversations.info', 'channel_not_found');
    // app_mention carries no channel_type: only conversations.info (or the D prefix) says it is a DM.
    const event = h.slack.build.appMention({ text: `${h.slack.build.mention()} psst`, channel: ALICE_DM });

    await h.deliver(event);

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(h.slack.callsTo('users.info').map((c) => c.response.error)).toEqual(['user_not_found']);
    expect(h.slack.callsTo('conversations.info').map((c) => c.response.error)).toEqual(['channel_not_found']);
    expect(h.handlers.messages[0]).toMatchObject({
      channelKey: `slack:${TEAM}:${ALICE_DM}`,
      authorId: FAKE_SLACK.users.alice,
      authorName: FAKE_SLACK.users.alice,
      direct: true,
      mentionsBot: true,
    });
  });

  it('replaces the mention of the bot with @name and renders other mentions', async () => {
    const text = `${h.slack.build.mention()} ask ${h.slack.build.mention(FAKE_SLACK.users.bob)} about <#C0RANDOM1|random>`;

    await h.deliver(h.slack.build.channelMessage({ text }));

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(h.handlers.messages[0]).toMatchObject({
      mentionsBot: true,
      text: '@ebb ask @Bob Builder about #random',
    });
  });

  it('delivers a message once when app_mention duplicates it, whichever comes first', async () => {
    const message = h.slack.build.channelMessage({ text: `${h.slack.build.mention()} hi` });
    const mention = h.slack.build.appMentionFor(message);
    const other = h.slack.build.channelMessage({ text: `${h.slack.build.mention()} again` });

    await h.deliver(message);
    await h.deliver(mention);
    await h.deliver(h.slack.build.appMentionFor(other));
    await h.deliver(other);

    await vi.waitFor(() => expect(h.log.ignored(message.ts)).toEqual(['duplicate']));
    await vi.waitFor(() => expect(h.log.ignored(other.ts)).toEqual(['duplicate']));
    expect(h.handlers.messages.map((m) => [m.platformMessageId, m.mentionsBot, m.direct])).toEqual([
      [message.ts, true, false],
      [other.ts, true, false],
    ]);
  });

  it('does not deliver its own messages', async () => {
    const own = h.slack.build.ownMessage({ text: 'my earlier answer' });

    await h.deliver(own);

    await vi.waitFor(() => expect(h.log.ignored(own.ts)).toEqual(['own_message']));
    expect(h.handlers.messages).toEqual([]);
  });

  it("delivers another bot's message as fromBot with the bot's name", async () => {
    const event = h.slack.build.botMessage({ text: 'build #42 passed' });

    await h.deliver(event);

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(h.handlers.messages[0]).toMatchObject({
      authorId: FAKE_SLACK.otherBot.botId,
      authorName: FAKE_SLACK.otherBot.name,
      fromBot: true,
      text: 'build #42 passed',
    });
  });

  it('reports a deletion under the ts the message was delivered with, in its conversation', async () => {
    const message = h.slack.build.channelMessage({ text: 'my password is hunter2' });
    const reply = h.slack.build.threadReply({ text: 'and my address', threadTs: String(message.ts) });
    await h.deliver(message);
    await h.deliver(reply);
    // The last as Slack sends one it no longer has in its history: no previous_message, no thread_ts.
    const { previous_message: _previous, ...bare } = h.slack.build.messageDeleted(reply);
    const deletions = [h.slack.build.messageDeleted(message), h.slack.build.messageDeleted(reply), bare];

    for (const deletion of deletions) await h.deliver(deletion);

    await vi.waitFor(() => expect(h.handlers.changes).toHaveLength(3));
    expect(h.handlers.messages.map((m) => [m.channelKey, m.platformMessageId])).toEqual([
      [`slack:${TEAM}:${GENERAL}`, message.ts],
      [`slack:${TEAM}:${GENERAL}:${message.ts}`, reply.ts],
    ]);
    expect(h.handlers.changes).toEqual([
      {
        kind: 'deleted',
        platform: 'slack',
        channelKey: `slack:${TEAM}:${GENERAL}`,
        platformMessageIds: [message.ts],
        ts: slackTsToIso(String(deletions[0]?.ts)),
        threadUnknown: true,
      },
      {
        kind: 'deleted',
        platform: 'slack',
        channelKey: `slack:${TEAM}:${GENERAL}:${message.ts}`,
        platformMessageIds: [reply.ts],
        ts: slackTsToIso(String(deletions[1]?.ts)),
      },
      {
        kind: 'deleted',
        platform: 'slack',
        channelKey: `slack:${TEAM}:${GENERAL}`,
        platformMessageIds: [reply.ts],
        ts: slackTsToIso(String(bare.ts)),
        threadUnknown: true,
      },
    ]);
  });

  it('reports a deletion and an edit in an assistant thread, past the AI-app middleware', async () => {
    const threadTs = h.slack.build.directMessage({ text: 'x' }).ts ?? '';
    await h.deliver(h.slack.build.assistantThreadStarted({ threadTs }));
    const asked = h.slack.build.directMessage({ text: 'my ssn is 078-05-1120', threadTs });
    const other = h.slack.build.directMessage({ text: 'my pin is 0000', threadTs });
    await h.deliver(asked);
    await h.deliver(other);

    await h.deliver(h.slack.build.messageDeleted(asked));
    await h.deliver(h.slack.build.messageChanged(other, 'never mind'));

    await vi.waitFor(() => expect(h.handlers.changes).toHaveLength(2));
    const key = `slack:${TEAM}:${ALICE_DM}:${threadTs}`;
    expect(h.handlers.messages.map((m) => [m.channelKey, m.platformMessageId])).toEqual([
      [key, asked.ts],
      [key, other.ts],
    ]);
    expect(h.handlers.changes).toEqual([
      expect.objectContaining({ kind: 'deleted', channelKey: key, platformMessageIds: [asked.ts] }),
      expect.objectContaining({
        kind: 'edited',
        channelKey: key,
        platformMessageId: other.ts,
        text: 'never mind',
      }),
    ]);
  });

  it('reports a thread parent deleted with replies (a tombstone) as its deletion in the channel', async () => {
    const parent = h.slack.build.channelMessage({ text: 'the launch code is 0000' });

    await h.deliver(h.slack.build.threadParentDeleted(parent, 3));

    await vi.waitFor(() => expect(h.handlers.changes).toHaveLength(1));
    expect(h.handlers.changes[0]).toMatchObject({
      kind: 'deleted',
      channelKey: `slack:${TEAM}:${GENERAL}`,
      platformMessageIds: [parent.ts],
    });
  });

  it('reports an edit with its new text, mentions rendered as for a new message', async () => {
    const original = h.slack.build.threadReply({ text: 'ask bob', threadTs: '1700000000.000100' });
    const text = `${h.slack.build.mention()} ask ${h.slack.build.mention(FAKE_SLACK.users.bob)} & not me`;
    const edit = h.slack.build.messageChanged(original, text);

    await h.deliver(edit);

    await vi.waitFor(() => expect(h.handlers.changes).toHaveLength(1));
    expect(h.handlers.changes[0]).toEqual({
      kind: 'edited',
      platform: 'slack',
      channelKey: `slack:${TEAM}:${GENERAL}:1700000000.000100`,
      platformMessageId: original.ts,
      text: '@ebb ask @Bob Builder & not me',
      ts: slackTsToIso(String(edit.ts)),
    });
  });

  it('reports the deletion of its own reply, and ignores unfurls and changes to its own replies', async () => {
    const own = h.slack.build.ownMessage({ text: 'the answer, with a link' });
    const unfurl = h.slack.build.messageUnfurled(
      h.slack.build.channelMessage({ text: 'https://example.com/' }),
    );
    const ownUnfurl = h.slack.build.messageChanged(own, 'the answer, with a link (mrkdwn)');

    await h.deliver(unfurl);
    await h.deliver(ownUnfurl);
    await h.deliver(h.slack.build.messageDeleted(own));

    await vi.waitFor(() => expect(h.handlers.changes).toHaveLength(1));
    expect(h.log.ignored(unfurl.ts)).toEqual(['unchanged']);
    expect(h.log.ignored(ownUnfurl.ts)).toEqual(['own_message']);
    expect(h.handlers.changes[0]).toMatchObject({ kind: 'deleted', platformMessageIds: [own.ts] });
  });

  it('reports a retried change once, and lets the retry through when the handler failed', async () => {
    const message = h.slack.build.channelMessage({ text: 'x' });
    const deletion = h.slack.build.messageDeleted(message);
    const edit = h.slack.build.messageChanged(message, 'y');
    let calls = 0;
    h.handlers.onMessageChange = async (change) => {
      calls++;
      if (change.kind === 'edited' && calls === 2) throw new Error('store down');
      h.handlers.changes.push(change);
    };

    await h.deliver(deletion);
    await h.deliver(deletion, 1);
    await vi.waitFor(() => expect(h.log.ignored(deletion.ts)).toEqual(['duplicate']));
    await h.deliver(edit);
    await vi.waitFor(() => expect(h.log.events('slack.message_change_failed')).toHaveLength(1));
    await h.deliver(edit, 1);

    await vi.waitFor(() => expect(h.handlers.changes).toHaveLength(2));
    expect(h.handlers.changes.map((c) => c.kind)).toEqual(['deleted', 'edited']);
    expect(h.log.events('slack.message_change_failed')[0]?.fields).toMatchObject({
      channel: `slack:${TEAM}:${GENERAL}`,
      kind: 'edited',
      platformMessageId: message.ts,
    });
    expect(calls).toBe(3);
  });

  it('acknowledges a change before it is applied', async () => {
    let finish: () => void = () => {};
    h.handlers.onMessageChange = (change) => {
      h.handlers.changes.push(change);
      return new Promise((resolve) => {
        finish = () => resolve(undefined);
      });
    };

    await h.deliver(h.slack.build.messageDeleted(h.slack.build.channelMessage({ text: 'slow' })));

    await vi.waitFor(() => expect(h.handlers.changes).toHaveLength(1));
    finish();
  });

  it('ignores changes when the bot takes none', async () => {
    delete h.handlers.onMessageChange;
    const deletion = h.slack.build.messageDeleted(h.slack.build.channelMessage({ text: 'x' }));

    await h.deliver(deletion);

    await vi.waitFor(() => expect(h.log.ignored(deletion.ts)).toEqual(['no_change_handler']));
  });

  it('acknowledges an event before the turn is done', async () => {
    let finishTurn: () => void = () => {};
    h.handlers.onMessage = (message) => {
      h.handlers.messages.push(message);
      return new Promise((resolve) => {
        finishTurn = () => resolve({ reply: null, archived: 'stored' });
      });
    };

    await h.deliver(h.slack.build.channelMessage({ text: 'a long question' }));

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    finishTurn();
  });

  it('calls the handler once for a retried event', async () => {
    const event = h.slack.build.channelMessage({ text: 'are you there?' });

    await h.deliver(event);
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    await h.deliver(event, 1);

    await vi.waitFor(() => expect(h.log.ignored(event.ts)).toEqual(['duplicate']));
    expect(h.handlers.messages).toHaveLength(1);
  });

  it('lets a retry through when the handler failed the first time', async () => {
    const event = h.slack.build.channelMessage({ text: 'flaky' });
    let calls = 0;
    h.handlers.onMessage = async (message) => {
      calls++;
      if (calls === 1) throw new Error('store down');
      h.handlers.messages.push(message);
      return undefined;
    };

    await h.deliver(event);
    await vi.waitFor(() =>
      expect(h.log.entries.some((e) => e.message === 'slack message handler failed')).toBe(true),
    );
    await h.deliver(event, 1);

    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    expect(calls).toBe(2);
  });
});
