/**
 * What Slack receives from the adapter, through the real Bolt against FakeSlack: replies in the
 * thread they were asked in, long replies in several messages, and the typing signal — the status
 * line in an assistant thread (Slack's AI-app surface, with suggested prompts), the reaction
 * elsewhere or when Slack refuses the status.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ALICE_DM, GENERAL, startHarness, stopHarnesses, TEAM } from '../test/slack-adapter-harness.js';

afterEach(stopHarnesses);

describe.each(['socket', 'http'] as const)('Slack replies in %s mode', (mode) => {
  it('answers a thread reply in its thread, and a top-level message in the channel', async () => {
    const h = await startHarness(mode);
    const parent = h.slack.build.channelMessage({ text: 'deploy at noon?' });
    await h.deliver(
      h.slack.build.threadReply({ text: `${h.slack.build.mention()} sure?`, threadTs: String(parent.ts) }),
    );
    await h.deliver(h.slack.build.channelMessage({ text: `${h.slack.build.mention()} hello` }));
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(2));
    const [inThread, topLevel] = h.handlers.messages;

    await h.adapter.send(inThread?.channelKey ?? '', 'In the thread.');
    await h.adapter.send(topLevel?.channelKey ?? '', 'In the channel.');

    expect(inThread?.channelKey).toBe(`slack:${TEAM}:${GENERAL}:${parent.ts}`);
    expect(topLevel?.channelKey).toBe(`slack:${TEAM}:${GENERAL}`);
    expect(h.slack.messages.map(({ channel, threadTs, text }) => ({ channel, threadTs, text }))).toEqual([
      { channel: GENERAL, threadTs: String(parent.ts), text: 'In the thread.' },
      { channel: GENERAL, threadTs: undefined, text: 'In the channel.' },
    ]);
  });

  it('posts a long reply as several messages in the same thread, the first ts as its id', async () => {
    const h = await startHarness(mode, { messageLimit: 200 });
    const key = `slack:${TEAM}:${GENERAL}:1700000000.000100`;
    const paragraphs = Array.from({ length: 6 }, (_, i) => `Paragraph ${i}: ${'words '.repeat(10).trim()}.`);

    const sent = await h.adapter.send(key, paragraphs.join('\n\n'));

    expect(h.slack.messages.length).toBeGreaterThan(1);
    expect(sent.platformMessageId).toBe(h.slack.messages[0]?.ts);
    for (const message of h.slack.messages) {
      expect(message.threadTs).toBe('1700000000.000100');
      expect(message.text.length).toBeLessThanOrEqual(200);
      // Whole paragraphs only.
      for (const part of message.text.split('\n\n')) expect(paragraphs).toContain(part);
    }
    expect(h.slack.messages.map((m) => m.text).join('\n\n')).toBe(paragraphs.join('\n\n'));
  });

  it('offers suggested prompts when an assistant thread starts, and shows the status line while thinking', async () => {
    const h = await startHarness(mode);
    const threadTs = '1700000000.000200';
    await h.deliver(h.slack.build.assistantThreadStarted({ threadTs }));
    await vi.waitFor(() => expect(h.slack.suggestedPrompts).toHaveLength(1));
    expect(h.slack.suggestedPrompts[0]).toEqual({
      channel: ALICE_DM,
      threadTs,
      prompts: [
        { title: 'What can you do?', message: 'What can you help me with?' },
        { title: 'Sum up', message: 'Sum up what we have talked about so far.' },
      ],
    });

    const question = h.slack.build.directMessage({ text: 'what is ebb?', threadTs });
    await h.deliver(question);
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    const key = h.handlers.messages[0]?.channelKey ?? '';
    expect(key).toBe(`slack:${TEAM}:${ALICE_DM}:${threadTs}`);

    await h.adapter.typing(key);
    expect(h.slack.assistantStatus(ALICE_DM, threadTs)).toBe('is thinking…');
    expect(h.slack.reactionsOn(ALICE_DM, String(question.ts))).toEqual([]);

    await h.adapter.send(key, 'A **chat bot**.');
    expect(h.slack.messages.at(-1)).toMatchObject({ channel: ALICE_DM, threadTs, text: 'A *chat bot*.' });
    expect(h.slack.assistantStatus(ALICE_DM, threadTs)).toBeUndefined();
    expect(h.slack.callsTo('reactions.add')).toHaveLength(0);
  });

  it('knows an assistant thread by its messages alone (after a restart), and falls back to the reaction when Slack refuses the status', async () => {
    const h = await startHarness(mode);
    const threadTs = '1700000000.000300';
    const question = h.slack.build.directMessage({ text: 'still there?', threadTs });
    await h.deliver(question);
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    const key = `slack:${TEAM}:${ALICE_DM}:${threadTs}`;

    await h.adapter.typing(key);
    expect(h.slack.assistantStatus(ALICE_DM, threadTs)).toBe('is thinking…');

    h.slack.fail('assistant.threads.setStatus', 'missing_scope');
    await h.adapter.typing(key);
    expect(h.slack.reactionsOn(ALICE_DM, String(question.ts))).toEqual(['hourglass_flowing_sand']);
    // Refused once, the thread gets the reaction from then on.
    await h.adapter.typing(key);
    expect(h.slack.callsTo('assistant.threads.setStatus')).toHaveLength(2);
  });

  it('keeps to the reaction everywhere with the surface turned off', async () => {
    const h = await startHarness(mode, { assistantStatus: false });
    const threadTs = '1700000000.000400';
    await h.deliver(h.slack.build.assistantThreadStarted({ threadTs }));
    const question = h.slack.build.directMessage({ text: 'hi', threadTs });
    await h.deliver(question);
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));

    await h.adapter.typing(`slack:${TEAM}:${ALICE_DM}:${threadTs}`);

    expect(h.slack.reactionsOn(ALICE_DM, String(question.ts))).toEqual(['hourglass_flowing_sand']);
    expect(h.slack.callsTo('assistant.threads.setStatus')).toHaveLength(0);
    expect(h.slack.suggestedPrompts).toHaveLength(0);
  });
});
