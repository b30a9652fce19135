/**
 * Message events through the SlackAdapter, in both modes: what `onMessage` receives, and what is
 * dropped (duplicates, retries, its own messages, edits) with the log line that says why.
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
} from './slack-adapter.harness.js';

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

  it('ignores edits and deletions', async () => {
    const original = h.slack.build.channelMessage({ text: 'tpyo' });
    const edit = h.slack.build.messageChanged(original, 'typo');
    const deletion = h.slack.build.messageDeleted(original);

    await h.deliver(edit);
    await h.deliver(deletion);

    await vi.waitFor(() => expect(h.log.ignored(edit.ts)).toEqual(['unsupported_subtype']));
    await vi.waitFor(() => expect(h.log.ignored(deletion.ts)).toEqual(['unsupported_subtype']));
    expect(h.handlers.messages).toEqual([]);
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
