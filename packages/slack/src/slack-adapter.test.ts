/**
 * The real Bolt (Socket Mode and the Events API) against FakeSlack. Absence is never asserted after a
 * sleep: every dropped event leaves a `slack.message_ignored` log line to wait for, and a rejected
 * HTTP request is rejected before Bolt sees it.
 */
import type { CommandInvocation, InboundMessage, PlatformHandlers, TurnResult } from '@ebb/core';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { FAKE_SLACK, FakeSlack, type SlackEventPayload, type SlashCommandPayload } from '@ebb/testing/slack';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SlackAdapter, type SlackAdapterOptions } from './slack-adapter.js';

const BOT_TOKEN = 'xoxb-1-test-bot-token-secret';
const APP_TOKEN = 'xapp-1-test-app-token-secret';
const SIGNING_SECRET = 'test-signing-secret-0123456789';
const TEAM = FAKE_SLACK.teamId;
const GENERAL = FAKE_SLACK.channels.general;
const ALICE_DM = FAKE_SLACK.channels.aliceDm;

class SlackLog extends RecordingLogger {
  /** The reasons logged for dropping the message with this ts. */
  ignored(ts: string | undefined): unknown[] {
    return this.events('slack.message_ignored')
      .filter((e) => e.fields.ts === ts)
      .map((e) => e.fields.reason);
  }
}

class RecordingHandlers implements PlatformHandlers {
  readonly messages: InboundMessage[] = [];
  readonly commands: CommandInvocation[] = [];
  reply: (command: CommandInvocation) => Promise<string> = async (c) => `${c.name} answered (${c.args})`;
  onMessage = async (message: InboundMessage): Promise<TurnResult | undefined> => {
    this.messages.push(message);
    return undefined;
  };
  onCommand = async (command: CommandInvocation): Promise<string> => {
    this.commands.push(command);
    return this.reply(command);
  };
}

type Mode = SlackAdapterOptions['mode'];

interface Harness {
  readonly slack: FakeSlack;
  readonly adapter: SlackAdapter;
  readonly handlers: RecordingHandlers;
  readonly log: SlackLog;
  /** Delivers an event the way the mode does and waits until Slack has its ack. */
  deliver(event: SlackEventPayload, retry?: number): Promise<void>;
  /** Runs a slash command and returns the ack body (the immediate answer). */
  command(payload: SlashCommandPayload): Promise<Record<string, unknown> | undefined>;
}

const running: Harness[] = [];

async function startHarness(mode: Mode, extra: Partial<SlackAdapterOptions> = {}): Promise<Harness> {
  const slack = await FakeSlack.start();
  const log = new SlackLog();
  const handlers = new RecordingHandlers();
  const adapter = new SlackAdapter({
    mode,
    botToken: BOT_TOKEN,
    ...(mode === 'socket'
      ? { appToken: APP_TOKEN, socketPingTimeoutMs: 200 }
      : { signingSecret: SIGNING_SECRET, port: 0, host: '127.0.0.1' }),
    slackApiUrl: slack.apiUrl,
    logger: log,
    ...extra,
  });
  await adapter.start(handlers);
  const eventsUrl = adapter.eventsUrl ?? '';
  const harness: Harness = {
    slack,
    adapter,
    handlers,
    log,
    async deliver(event, retry) {
      if (mode === 'socket') {
        const id = slack.deliver(event, retry === undefined ? {} : { retryAttempt: retry });
        await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined());
        return;
      }
      const options = { signingSecret: SIGNING_SECRET, ...(retry === undefined ? {} : { retryNum: retry }) };
      const response = await slack.sendEvent(eventsUrl, event, options);
      expect(response.status).toBe(200);
    },
    async command(payload) {
      if (mode === 'socket') {
        const id = slack.deliverCommand(payload);
        await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined());
        return slack.ackFor(id)?.payload;
      }
      const response = await slack.sendCommand(eventsUrl, payload, { signingSecret: SIGNING_SECRET });
      expect(response.status).toBe(200);
      return response.text === '' ? undefined : (response.json as Record<string, unknown>);
    },
  };
  running.push(harness);
  return harness;
}

afterEach(async () => {
  for (const h of running.splice(0)) {
    await h.adapter.stop();
    await h.slack.close();
  }
});

describe.each(['socket', 'http'] as const)('SlackAdapter in %s mode', (mode) => {
  let h: Harness;

  beforeEach(async () => {
    h = await startHarness(mode);
  });

  it('learns who it is from one auth.test at start', () => {
    expect(h.slack.callsTo('auth.test')).toHaveLength(1);
    expect(h.slack.callsTo('auth.test')[0]?.tokenKind).toBe('bot');
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

describe('SlackAdapter over the Events API', () => {
  it('listens on the requested host and a free port', async () => {
    const h = await startHarness('http');

    expect(h.adapter.eventsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/slack\/events$/);
    expect(h.adapter.eventsUrl).not.toMatch(/:0\//);
  });

  it('answers the url_verification challenge Slack sends when the URL is configured', async () => {
    const h = await startHarness('http');

    const response = await h.slack.sendUrlVerification(h.adapter.eventsUrl ?? '', 'challenge-3eZbrw1aBm2r', {
      signingSecret: SIGNING_SECRET,
    });

    expect(response).toMatchObject({ status: 200, json: { challenge: 'challenge-3eZbrw1aBm2r' } });
  });

  it('rejects a forged signature with 401 and never calls the handler', async () => {
    const h = await startHarness('http');
    const event = h.slack.build.channelMessage({ text: 'let me in' });

    const response = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
      forgeSignature: true,
    });

    expect(response.status).toBe(401);
    expect(h.handlers.messages).toEqual([]);
    expect(h.log.ignored(event.ts)).toEqual([]);
  });

  it('rejects a request signed more than five minutes ago with 401', async () => {
    const h = await startHarness('http');
    const event = h.slack.build.channelMessage({ text: 'replayed' });

    const response = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
      timestamp: Math.floor(Date.now() / 1000) - 6 * 60,
    });

    expect(response.status).toBe(401);
    expect(h.handlers.messages).toEqual([]);
  });

  it('acknowledges a retry at once with 200', async () => {
    const h = await startHarness('http');
    const event = h.slack.build.channelMessage({ text: 'once' });

    const first = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
    });
    const retry = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
      retryNum: 1,
      retryReason: 'http_timeout',
    });

    expect([first.status, retry.status]).toEqual([200, 200]);
    await vi.waitFor(() => expect(h.log.ignored(event.ts)).toEqual(['duplicate']));
    expect(h.handlers.messages).toHaveLength(1);
  });

  it('answers 413 to a body over maxBodyBytes, signed or not, and calls nothing', async () => {
    const h = await startHarness('http', { maxBodyBytes: 4096 });
    const event = h.slack.build.channelMessage({ text: 'x'.repeat(8_000) });

    const signed = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
    });
    const unsigned = await fetch(h.adapter.eventsUrl ?? '', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(1_000_000),
    });

    expect([signed.status, unsigned.status]).toEqual([413, 413]);
    expect(h.handlers.messages).toEqual([]);
    // Below the limit, the same kind of message goes through.
    const small = h.slack.build.channelMessage({ text: 'x'.repeat(1_000) });
    expect(
      (await h.slack.sendEvent(h.adapter.eventsUrl ?? '', small, { signingSecret: SIGNING_SECRET })).status,
    ).toBe(200);
  });

  it('stops listening on stop', async () => {
    const h = await startHarness('http');
    const url = h.adapter.eventsUrl ?? '';

    await h.adapter.stop();

    await expect(fetch(url, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});

describe('SlackAdapter over Socket Mode', () => {
  it('opens the connection with the app token and acks every envelope', async () => {
    const h = await startHarness('socket');

    expect(h.slack.callsTo('apps.connections.open').map((c) => c.tokenKind)).toEqual(['app']);
    const id = h.slack.deliver(h.slack.build.channelMessage({ text: 'hi' }));
    await vi.waitFor(() => expect(h.slack.ackFor(id)).toEqual({ envelopeId: id, payload: {} }));
  });

  it.each(['terminate', 'close', 'refresh'] as const)(
    'reconnects after the connection is dropped (%s) and keeps delivering',
    async (how) => {
      const h = await startHarness('socket');
      await h.deliver(h.slack.build.channelMessage({ text: 'before' }));
      await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));

      h.slack.dropConnections(how);

      await vi.waitFor(() => {
        expect(h.slack.socketConnections).toBe(2);
        expect(h.slack.openSockets).toBe(1);
      });
      await h.deliver(h.slack.build.channelMessage({ text: 'after' }));
      await vi.waitFor(() => expect(h.handlers.messages.map((m) => m.text)).toEqual(['before', 'after']));
      expect(h.slack.callsTo('apps.connections.open')).toHaveLength(2);
    },
  );

  it('closes the connection on stop', async () => {
    const h = await startHarness('socket');
    expect(h.slack.openSockets).toBe(1);

    await h.adapter.stop();

    await vi.waitFor(() => expect(h.slack.openSockets).toBe(0));
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
