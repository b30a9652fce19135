/**
 * Slash commands through the SlackAdapter, in both modes: answered in the ack body, with a help line
 * for unknown commands, a sentence for failures, and through `response_url` when the handler is slow.
 */
import { FAKE_SLACK } from '@ebb/testing/slack';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GENERAL, type Harness, startHarness, stopHarnesses, TEAM } from '../test/slack-adapter-harness.js';

afterEach(stopHarnesses);

describe.each(['socket', 'http'] as const)('SlackAdapter in %s mode', (mode) => {
  let h: Harness;

  beforeEach(async () => {
    h = await startHarness(mode);
  });

  it('answers /context and /compact ephemerally with the handler reply', async () => {
    const context = await h.command(h.slack.build.slashCommand({ command: '/context' }));
    const compact = await h.command(
      h.slack.build.slashCommand({
        command: '/compact',
        text: '  focus on the deploy plan ',
        user: 'U0BOB0001',
      }),
    );

    expect(context).toEqual({ response_type: 'ephemeral', text: 'context answered ()' });
    expect(compact).toEqual({
      response_type: 'ephemeral',
      text: 'compact answered (focus on the deploy plan)',
    });
    expect(h.handlers.commands).toEqual([
      {
        platform: 'slack',
        name: 'context',
        channelKey: `slack:${TEAM}:${GENERAL}`,
        userId: FAKE_SLACK.users.alice,
        args: '',
      },
      {
        platform: 'slack',
        name: 'compact',
        channelKey: `slack:${TEAM}:${GENERAL}`,
        userId: FAKE_SLACK.users.bob,
        args: 'focus on the deploy plan',
      },
    ]);
  });

  it('answers an unknown command with a help line, without calling the handler', async () => {
    const answer = await h.command(h.slack.build.slashCommand({ command: '/frobnicate' }));

    expect(answer).toMatchObject({ response_type: 'ephemeral', text: expect.stringContaining('/context') });
    expect(h.handlers.commands).toEqual([]);
  });

  it('answers a failing command with a sentence, not a stack trace', async () => {
    h.handlers.reply = async () => {
      throw new Error('db exploded at line 42');
    };

    const answer = await h.command(h.slack.build.slashCommand({ command: '/context' }));

    expect(answer).toEqual({
      response_type: 'ephemeral',
      text: 'Sorry, that command failed. Please try again in a moment.',
    });
  });
});

describe.each(['socket', 'http'] as const)('SlackAdapter in %s mode, slow commands', (mode) => {
  it('acks at once and answers through response_url when the handler is slow', async () => {
    const h = await startHarness(mode, { commandReplyTimeoutMs: 20 });
    let finish: (text: string) => void = () => {};
    h.handlers.reply = () => new Promise<string>((resolve) => (finish = resolve));

    const ack = await h.command(h.slack.build.slashCommand({ command: '/compact' }));
    finish('compacted 120 messages');

    expect(ack === undefined || Object.keys(ack).length === 0).toBe(true);
    await vi.waitFor(() =>
      expect(h.slack.responses.map((r) => r.body)).toEqual([
        { response_type: 'ephemeral', text: 'compacted 120 messages' },
      ]),
    );
  });
});
