import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { FakeSlack } from './fake-slack.js';
import { signSlackRequest } from './signing.js';
import { FAKE_SLACK } from './workspace.js';

let slack: FakeSlack;

beforeEach(async () => {
  slack = await FakeSlack.start();
});

afterEach(async () => {
  await slack.close();
});

interface ApiBody {
  readonly ok: boolean;
  readonly error?: string;
  readonly ts?: string;
  readonly url?: string;
  readonly [field: string]: unknown;
}

interface Frame {
  readonly type?: string;
  readonly envelope_id?: string;
  readonly payload?: Readonly<Record<string, unknown>>;
  readonly [field: string]: unknown;
}

/** Calls a Web API method the way WebClient does: form body, bearer token. */
async function call(
  method: string,
  args: Record<string, string>,
  token = 'xoxb-secret-bot',
): Promise<ApiBody> {
  const response = await fetch(`${slack.apiUrl}${method}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(args).toString(),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as ApiBody;
}

describe('FakeSlack Web API', () => {
  it('answers auth.test with the team, bot user and bot ids', async () => {
    const body = await call('auth.test', {});

    expect(body).toMatchObject({
      ok: true,
      team_id: FAKE_SLACK.teamId,
      user_id: FAKE_SLACK.botUserId,
      bot_id: FAKE_SLACK.botId,
      user: FAKE_SLACK.botName,
    });
  });

  it('records chat.postMessage with its thread and returns increasing ts', async () => {
    const first = await call('chat.postMessage', { channel: FAKE_SLACK.channels.general, text: 'one' });
    const second = await call('chat.postMessage', {
      channel: FAKE_SLACK.channels.general,
      text: 'two',
      thread_ts: first.ts ?? '',
    });

    expect(Number(second.ts)).toBeGreaterThan(Number(first.ts));
    expect(slack.messages).toEqual([
      { channel: FAKE_SLACK.channels.general, ts: first.ts, text: 'one' },
      { channel: FAKE_SLACK.channels.general, ts: second.ts, text: 'two', threadTs: first.ts },
    ]);
    expect(second.message).toMatchObject({ bot_id: FAKE_SLACK.botId, thread_ts: first.ts });
  });

  it('refuses unknown channels and methods the way Slack does', async () => {
    expect(await call('chat.postMessage', { channel: 'C0NOPE', text: 'x' })).toEqual({
      ok: false,
      error: 'channel_not_found',
    });
    expect(await call('chat.postMessage', { channel: FAKE_SLACK.channels.general })).toEqual({
      ok: false,
      error: 'no_text',
    });
    expect(await call('files.upload', {})).toEqual({ ok: false, error: 'unknown_method' });
  });

  it('checks the token type per method', async () => {
    expect(await call('apps.connections.open', {}, 'xoxb-secret-bot')).toEqual({
      ok: false,
      error: 'not_allowed_token_type',
    });
    expect(await call('auth.test', {}, 'xapp-secret-app')).toEqual({
      ok: false,
      error: 'not_allowed_token_type',
    });
    const open = await call('apps.connections.open', {}, 'xapp-secret-app');
    expect(open.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=/);
  });

  it('records every call without its token', async () => {
    await call('users.info', { user: FAKE_SLACK.users.alice, token: 'xoxb-in-body' });

    const [recorded] = slack.callsTo('users.info');
    expect(recorded).toMatchObject({
      method: 'users.info',
      args: { user: FAKE_SLACK.users.alice, token: '[redacted]' },
      authorization: 'Bearer [redacted]',
      tokenKind: 'bot',
    });
    expect(JSON.stringify(slack.calls)).not.toContain('secret');
    expect(JSON.stringify(slack.calls)).not.toContain('xoxb-in-body');
  });

  it('answers users.info and conversations.info from the workspace', async () => {
    const alice = await call('users.info', { user: FAKE_SLACK.users.alice });
    const dm = await call('conversations.info', { channel: FAKE_SLACK.channels.aliceDm });
    const general = await call('conversations.info', { channel: FAKE_SLACK.channels.general });

    expect(alice.user).toMatchObject({ name: 'alice', profile: { display_name: 'Alice' } });
    expect(dm.channel).toMatchObject({ is_im: true, user: FAKE_SLACK.users.alice });
    expect(general.channel).toMatchObject({ is_channel: true, is_private: false });
    expect(await call('users.info', { user: 'U0NOBODY' })).toEqual({ ok: false, error: 'user_not_found' });
  });

  it('shows an assistant thread status until the app replies in the thread', async () => {
    const thread = { channel_id: FAKE_SLACK.channels.aliceDm, thread_ts: '1700000000.000100' };

    expect(await call('assistant.threads.setStatus', { ...thread, status: 'is thinking…' })).toEqual({
      ok: true,
    });
    expect(slack.assistantStatus(thread.channel_id, thread.thread_ts)).toBe('is thinking…');
    await call('chat.postMessage', {
      channel: thread.channel_id,
      thread_ts: thread.thread_ts,
      text: 'answer',
    });

    expect(slack.assistantStatus(thread.channel_id, thread.thread_ts)).toBeUndefined();
    expect(slack.assistantStatuses.map((s) => [s.status, s.byReply])).toEqual([
      ['is thinking…', false],
      ['', true],
    ]);
    expect(await call('assistant.threads.setStatus', { ...thread, channel_id: 'D0NOWHERE' })).toEqual({
      ok: false,
      error: 'channel_not_found',
    });
    expect(await call('assistant.threads.setStatus', { channel_id: thread.channel_id, status: 'x' })).toEqual(
      {
        ok: false,
        error: 'invalid_thread_ts',
      },
    );
  });

  it('records suggested prompts sent JSON-encoded in a form body, refusing malformed ones', async () => {
    const thread = { channel_id: FAKE_SLACK.channels.aliceDm, thread_ts: '1700000000.000100' };
    const prompts = [{ title: 'Summarize', message: 'Summarize this.' }];

    expect(
      await call('assistant.threads.setSuggestedPrompts', { ...thread, prompts: JSON.stringify(prompts) }),
    ).toEqual({ ok: true });
    expect(
      await call('assistant.threads.setSuggestedPrompts', {
        ...thread,
        prompts: JSON.stringify([{ title: 'x' }]),
      }),
    ).toEqual({ ok: false, error: 'invalid_arguments' });
    expect(slack.suggestedPrompts).toEqual([
      { channel: thread.channel_id, threadTs: thread.thread_ts, prompts },
    ]);
  });

  it('adds and removes reactions, refusing duplicates', async () => {
    const args = { channel: FAKE_SLACK.channels.general, timestamp: '1.000001', name: 'eyes' };

    expect(await call('reactions.add', args)).toEqual({ ok: true });
    expect(await call('reactions.add', args)).toEqual({ ok: false, error: 'already_reacted' });
    expect(slack.reactionsOn(args.channel, args.timestamp)).toEqual(['eyes']);
    expect(await call('reactions.remove', args)).toEqual({ ok: true });
    expect(slack.reactionsOn(args.channel, args.timestamp)).toEqual([]);
  });

  it("updates and deletes the app's own messages, refusing ones it never posted", async () => {
    const general = FAKE_SLACK.channels.general;
    const kept = await call('chat.postMessage', { channel: general, text: 'keep' });
    const gone = await call('chat.postMessage', { channel: general, text: 'oops' });

    expect(await call('chat.update', { channel: general, ts: kept.ts ?? '', text: 'kept' })).toEqual({
      ok: true,
      channel: general,
      ts: kept.ts,
      text: 'kept',
    });
    expect(await call('chat.delete', { channel: general, ts: gone.ts ?? '' })).toEqual({
      ok: true,
      channel: general,
      ts: gone.ts,
    });
    expect(await call('chat.delete', { channel: general, ts: gone.ts ?? '' })).toEqual({
      ok: false,
      error: 'message_not_found',
    });
    expect(slack.messages).toEqual([{ channel: general, ts: kept.ts, text: 'kept' }]);
  });

  it('fails scripted calls, then answers normally', async () => {
    slack.fail('reactions.add', 'missing_scope', 1);
    const args = { channel: FAKE_SLACK.channels.general, timestamp: '1.000001', name: 'eyes' };

    expect(await call('reactions.add', args)).toEqual({ ok: false, error: 'missing_scope' });
    expect(await call('reactions.add', args)).toEqual({ ok: true });
  });
});

describe('FakeSlack change payloads', () => {
  it('nests the message as Slack does in message_changed and message_deleted, under an event ts of its own', () => {
    const reply = slack.build.threadReply({ text: 'tpyo', threadTs: '1700000000.000100' });
    const edit = slack.build.messageChanged(reply, 'typo');
    const deletion = slack.build.messageDeleted(reply);
    const { channel: _c, event_ts: _e, channel_type: _t, ...nested } = reply;

    expect(edit).toMatchObject({
      type: 'message',
      subtype: 'message_changed',
      channel: reply.channel,
      hidden: true,
      previous_message: nested,
      message: {
        ...nested,
        text: 'typo',
        blocks: [expect.objectContaining({ type: 'rich_text' })],
        edited: { user: reply.user, ts: edit.ts },
      },
    });
    expect(edit.message).not.toHaveProperty('channel');
    expect(deletion).toMatchObject({
      subtype: 'message_deleted',
      deleted_ts: reply.ts,
      previous_message: nested,
    });
    expect(new Set([reply.ts, edit.ts, deletion.ts]).size).toBe(3);
  });

  it('reports a thread parent deleted with replies as a tombstone, and an unfurl without an edited stamp', () => {
    const parent = slack.build.channelMessage({ text: 'see https://example.com/' });

    expect(slack.build.threadParentDeleted(parent, 2)).toMatchObject({
      subtype: 'message_changed',
      message: { subtype: 'tombstone', ts: parent.ts, thread_ts: parent.ts, reply_count: 2 },
      previous_message: { ts: parent.ts, text: parent.text },
    });
    const unfurl = slack.build.messageUnfurled(parent);
    expect(unfurl).toMatchObject({ message: { text: parent.text, attachments: [expect.any(Object)] } });
    expect(unfurl.message).not.toHaveProperty('edited');
  });
});

describe('FakeSlack rate limits', () => {
  /** Calls a method without assuming HTTP 200, and returns the status and Retry-After too. */
  async function raw(
    method: string,
    args: Record<string, string>,
  ): Promise<{ status: number; retryAfter: string | null; body: ApiBody }> {
    const response = await fetch(`${slack.apiUrl}${method}`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer xoxb-secret-bot',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(args).toString(),
    });
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      body: (await response.json()) as ApiBody,
    };
  }

  const post = { channel: FAKE_SLACK.channels.general, text: 'hello' };

  it('answers 429 with Retry-After and ratelimited the scripted number of times, then posts', async () => {
    slack.rateLimit('chat.postMessage', { times: 2, retryAfterSeconds: 3 });

    const first = await raw('chat.postMessage', post);
    const other = await raw('auth.test', {});
    const second = await raw('chat.postMessage', post);
    const third = await raw('chat.postMessage', post);

    const refused = { status: 429, retryAfter: '3', body: { ok: false, error: 'ratelimited' } };
    expect(first).toEqual(refused);
    expect(second).toEqual(refused);
    expect(other).toMatchObject({ status: 200, retryAfter: null, body: { ok: true } });
    expect(third).toMatchObject({ status: 200, retryAfter: null, body: { ok: true, channel: post.channel } });
    // A refused call posts nothing, and is recorded with its status and arrival time.
    expect(slack.messages.map((m) => m.text)).toEqual(['hello']);
    expect(slack.callsTo('chat.postMessage').map((c) => [c.status, c.response.error])).toEqual([
      [429, 'ratelimited'],
      [429, 'ratelimited'],
      [200, undefined],
    ]);
    const times = slack.calls.map((c) => c.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times.every((at) => Math.abs(at - Date.now()) < 60_000)).toBe(true);
  });

  it('takes scripted failures and rate limits of a method in the order they were scripted', async () => {
    slack.fail('chat.postMessage', 'channel_not_found').rateLimit('chat.postMessage');

    const answers = [
      await raw('chat.postMessage', post),
      await raw('chat.postMessage', post),
      await raw('chat.postMessage', post),
    ];

    expect(answers.map((a) => [a.status, a.retryAfter, a.body.error])).toEqual([
      [200, null, 'channel_not_found'],
      [429, '1', 'ratelimited'],
      [200, null, undefined],
    ]);
  });

  it('rate-limits every call with times Infinity', async () => {
    slack.rateLimit('reactions.add', { times: Number.POSITIVE_INFINITY, retryAfterSeconds: 0 });
    const args = { channel: FAKE_SLACK.channels.general, timestamp: '1.000001', name: 'eyes' };

    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await raw('reactions.add', args)).status);

    expect(statuses).toEqual([429, 429, 429, 429, 429]);
    expect(slack.reactionsOn(args.channel, args.timestamp)).toEqual([]);
  });

  it('refuses a Retry-After that is not whole seconds, as Slack never sends one', () => {
    expect(() => slack.rateLimit('chat.postMessage', { retryAfterSeconds: 0.5 })).toThrow(/whole number/);
    expect(() => slack.rateLimit('chat.postMessage', { times: 0 })).toThrow(/times >= 1/);
  });
});

describe('FakeSlack Socket Mode', () => {
  async function connect(): Promise<{ ws: WebSocket; frames: Frame[] }> {
    const { url = '' } = await call('apps.connections.open', {}, 'xapp-secret-app');
    const ws = new WebSocket(url);
    const frames: Frame[] = [];
    ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Frame));
    await vi.waitFor(() => expect(frames[0]?.type).toBe('hello'));
    return { ws, frames };
  }

  it('says hello, delivers envelopes and records acks by envelope id', async () => {
    const { ws, frames } = await connect();
    const event = slack.build.channelMessage({ text: 'hi' });

    const envelopeId = slack.deliver(event);

    await vi.waitFor(() => expect(frames).toHaveLength(2));
    expect(frames[1]).toMatchObject({
      envelope_id: envelopeId,
      type: 'events_api',
      retry_attempt: 0,
      payload: { type: 'event_callback', event, team_id: FAKE_SLACK.teamId },
    });
    ws.send(JSON.stringify({ envelope_id: envelopeId, payload: {} }));
    await vi.waitFor(() => expect(slack.ackFor(envelopeId)).toEqual({ envelopeId, payload: {} }));
    ws.close();
  });

  it('keeps the event_id of an event delivered again as a retry', async () => {
    const { ws, frames } = await connect();
    const event = slack.build.channelMessage({ text: 'hi' });

    slack.deliver(event);
    slack.deliver(event, { retryAttempt: 1 });

    await vi.waitFor(() => expect(frames).toHaveLength(3));
    expect(frames[2]?.payload?.event_id).toBe(frames[1]?.payload?.event_id);
    expect(frames[2]).toMatchObject({ retry_attempt: 1, retry_reason: 'timeout' });
    ws.close();
  });

  it('accepts a ticket once', async () => {
    const { url = '' } = await call('apps.connections.open', {}, 'xapp-secret-app');
    const first = new WebSocket(url);
    await new Promise((resolve) => first.once('open', resolve));
    const second = new WebSocket(url);

    const status = await new Promise<number | undefined>((resolve) =>
      second.once('unexpected-response', (_req, res) => resolve(res.statusCode)),
    );

    expect(status).toBe(401);
    first.close();
  });

  it('drops connections on request', async () => {
    const { ws } = await connect();
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));

    slack.dropConnections('close');

    expect(await closed).toBe(1001);
    await vi.waitFor(() => expect(slack.openSockets).toBe(0));
    expect(() => slack.deliver(slack.build.channelMessage({ text: 'x' }))).toThrow(/no open Socket Mode/);
  });
});

describe('FakeSlack Events API client', () => {
  let server: Server;
  let received: { headers: Record<string, unknown>; body: string }[];
  let url: string;

  beforeEach(async () => {
    received = [];
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  });

  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('signs an event_callback with v0 HMAC-SHA256 over timestamp and body', async () => {
    const event = slack.build.channelMessage({ text: 'hi' });

    const response = await slack.sendEvent(url, event, { signingSecret: 'shh', retryNum: 2 });

    expect(response).toEqual({ status: 200, text: '{"ok":true}', json: { ok: true } });
    const [request] = received;
    const timestamp = Number(request?.headers['x-slack-request-timestamp']);
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(60);
    expect(request?.headers['x-slack-signature']).toBe(
      signSlackRequest('shh', timestamp, request?.body ?? ''),
    );
    expect(request?.headers['x-slack-retry-num']).toBe('2');
    expect(request?.headers['x-slack-retry-reason']).toBe('http_timeout');
    expect(JSON.parse(request?.body ?? '')).toMatchObject({ type: 'event_callback', event });
  });

  it('forges signatures and old timestamps on request', async () => {
    const event = slack.build.channelMessage({ text: 'hi' });

    await slack.sendEvent(url, event, { signingSecret: 'shh', forgeSignature: true, timestamp: 1_000 });

    const [request] = received;
    expect(request?.headers['x-slack-request-timestamp']).toBe('1000');
    expect(request?.headers['x-slack-signature']).not.toBe(
      signSlackRequest('shh', 1_000, request?.body ?? ''),
    );
  });

  it('sends slash commands as a form with a response_url on the fake', async () => {
    const command = slack.build.slashCommand({ command: '/compact', text: 'the deploy' });

    await slack.sendCommand(url, command, { signingSecret: 'shh' });

    const [request] = received;
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(request?.body))).toEqual(command);
    const answer = await fetch(command.response_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'done' }),
    });
    expect(answer.status).toBe(200);
    expect(slack.responses).toEqual([
      { path: new URL(command.response_url).pathname, body: { text: 'done' } },
    ]);
  });
});
