/**
 * The SlackAdapter itself, in both modes: who it is at start, `send`, the typing reaction, tokens kept
 * out of the logs, and the options and tokens it refuses before connecting.
 */
import { FakeSlack } from '@ebb/testing/slack';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  APP_TOKEN,
  BOT_TOKEN,
  GENERAL,
  type Harness,
  RecordingHandlers,
  SIGNING_SECRET,
  startHarness,
  stopHarnesses,
  TEAM,
} from '../test/slack-adapter-harness.js';
import { SlackAdapter } from './slack-adapter.js';

afterEach(stopHarnesses);

describe.each(['socket', 'http'] as const)('SlackAdapter in %s mode', (mode) => {
  let h: Harness;

  beforeEach(async () => {
    h = await startHarness(mode);
  });

  it('learns who it is from one auth.test at start', () => {
    expect(h.slack.callsTo('auth.test')).toHaveLength(1);
    expect(h.slack.callsTo('auth.test')[0]?.tokenKind).toBe('bot');
  });

  it('posts to the channel, or into the thread for a thread key, and returns the new ts', async () => {
    const inChannel = await h.adapter.send(`slack:${TEAM}:${GENERAL}`, 'hello <everyone> & you');
    const inThread = await h.adapter.send(`slack:${TEAM}:${GENERAL}:1700000000.000100`, 'threaded');

    expect(h.slack.messages).toEqual([
      { channel: GENERAL, ts: inChannel.platformMessageId, text: 'hello &lt;everyone&gt; &amp; you' },
      { channel: GENERAL, ts: inThread.platformMessageId, text: 'threaded', threadTs: '1700000000.000100' },
    ]);
  });

  it('rejects a key that is not a Slack key, and maps Slack refusals', async () => {
    await expect(h.adapter.send('discord:1:2', 'x')).rejects.toMatchObject({
      code: 'invalid_channel_key',
    });
    await expect(h.adapter.send(`slack:${TEAM}:C0UNKNOWN`, 'x')).rejects.toMatchObject({
      code: 'slack_send_failed',
      retryable: false,
      message: 'Slack refused chat.postMessage: channel_not_found',
    });
  });

  it('shows typing as a reaction on the message being answered, removed when the answer is sent', async () => {
    const event = h.slack.build.channelMessage({ text: `${h.slack.build.mention()} think hard` });
    const key = `slack:${TEAM}:${GENERAL}`;
    await h.deliver(event);
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));

    await h.adapter.typing(key);
    await h.adapter.typing(key);
    expect(h.slack.reactionsOn(GENERAL, String(event.ts))).toEqual(['hourglass_flowing_sand']);
    expect(h.slack.callsTo('reactions.add')).toHaveLength(1);

    await h.adapter.send(key, 'done thinking');
    expect(h.slack.reactionsOn(GENERAL, String(event.ts))).toEqual([]);
  });

  it('never throws from typing', async () => {
    const key = `slack:${TEAM}:${GENERAL}`;
    await h.adapter.typing(key); // nothing to react to yet
    await h.deliver(h.slack.build.channelMessage({ text: 'hi' }));
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    h.slack.fail('reactions.add', 'missing_scope');

    await expect(h.adapter.typing(key)).resolves.toBeUndefined();
    await expect(h.adapter.typing('not-a-key')).resolves.toBeUndefined();
  });

  it('keeps the token out of every log line', async () => {
    await h.deliver(h.slack.build.channelMessage({ text: 'hi' }));
    await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));
    await h.adapter.send(`slack:${TEAM}:${GENERAL}`, 'hello');

    const logged = JSON.stringify(h.log.entries);
    expect(h.log.entries.length).toBeGreaterThan(0);
    expect(logged).not.toContain(BOT_TOKEN);
    expect(logged).not.toContain(APP_TOKEN);
    expect(logged).not.toContain(SIGNING_SECRET);
  });
});

describe('SlackAdapter start', () => {
  it('refuses options that cannot work, naming every problem', () => {
    expect(() => new SlackAdapter({ mode: 'socket', botToken: '' })).toThrow(
      'Slack adapter options are invalid: botToken is required; socket mode needs appToken (xapp-…).',
    );
    expect(() => new SlackAdapter({ mode: 'http', botToken: BOT_TOKEN })).toThrow(
      /http mode needs signingSecret/,
    );
  });

  it('refuses tokens of the wrong kind without printing them', () => {
    const swapped = () => new SlackAdapter({ mode: 'socket', botToken: APP_TOKEN, appToken: BOT_TOKEN });

    expect(swapped).toThrow(
      'botToken must be a bot token (xoxb-…), got one starting "xapp-"; appToken must be an app-level token (xapp-…), got one starting "xoxb-"',
    );
    expect(swapped).not.toThrow(/test/);
  });

  it('fails with slack_auth_failed when Slack rejects the bot token', async () => {
    const slack = await FakeSlack.start();
    slack.fail('auth.test', 'invalid_auth');
    const adapter = new SlackAdapter({
      mode: 'socket',
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      slackApiUrl: slack.apiUrl,
    });

    const error = await adapter.start(new RecordingHandlers()).catch((err: unknown) => err);

    expect(error).toMatchObject({ code: 'slack_auth_failed', retryable: false });
    expect(String(error)).not.toContain(BOT_TOKEN);
    await slack.close();
  });
});
