import { request } from 'node:http';
import type {
  CommandInvocation,
  InboundMessage,
  MessageChange,
  MessageChangeResult,
  PlatformHandlers,
  TurnResult,
} from '@ebb/core';
import { EventStreamReader } from '@ebb/testing/event-stream';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebAdapter } from './web-adapter.js';

/** A request with a `Host` of our choosing (fetch sends the URL's), as a DNS-rebinding page's carries its own name. */
function withHost(
  url: string,
  host: string,
  init: { method: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method, headers: { ...init.headers, host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

describe('WebAdapter', () => {
  let web: WebAdapter;
  const received: InboundMessage[] = [];
  const commands: CommandInvocation[] = [];
  const changes: MessageChange[] = [];
  /** What the handler answers next, when set (else it echoes). */
  let next: TurnResult | undefined;
  /** The change handler fails (the store away and the spool too) while set. */
  let changesFail = false;
  /** What the change handler answers (undefined: nothing, as an older handler does). */
  let changeResult: MessageChangeResult | undefined;

  beforeEach(async () => {
    received.length = 0;
    commands.length = 0;
    changes.length = 0;
    next = undefined;
    changesFail = false;
    changeResult = undefined;
    web = new WebAdapter({ port: 0 });
    const handlers: PlatformHandlers = {
      onMessage: async (message) => {
        received.push(message);
        if (next) return next;
        if (message.text === 'quiet') return { reply: null, archived: 'stored' };
        const reply = `you said ${message.text}`;
        await web.send(message.channelKey, reply);
        return { reply, archived: 'stored' };
      },
      onCommand: async (command) => {
        commands.push(command);
        return `${command.name} of ${command.channelKey}`;
      },
      onMessageChange: async (change) => {
        if (changesFail) throw new Error('store away, spool refused');
        changes.push(change);
        return changeResult;
      },
    };
    await web.start(handlers);
  });

  afterEach(() => web.stop());

  const post = (path: string, body: unknown) =>
    fetch(`${web.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('turns a POST into an inbound message of web:<id> and answers with the reply, or null', async () => {
    const res = await post('/api/channels/ops/messages', { author: 'ana', text: 'hi @ebb' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ reply: 'you said hi @ebb', id: received[0]?.platformMessageId });
    expect(received[0]).toMatchObject({
      platform: 'web',
      channelKey: 'web:ops',
      authorName: 'ana',
      mentionsBot: true,
      fromBot: false,
      reportsFailure: true,
    });
    expect(
      await (await post('/api/channels/ops/messages', { author: 'ana', text: 'quiet', id: 'q-1' })).json(),
    ).toEqual({ reply: null, id: 'q-1' });
  });

  it('rejects bad input, and what Postgres cannot store, with a clear error and calls nothing', async () => {
    const status = async (path: string, body: unknown) => {
      const res = await post(path, body);
      return [res.status, ((await res.json()) as { code: string }).code];
    };
    expect(await status('/api/channels/ops/messages', { text: 'no author' })).toEqual([400, 'bad_author']);
    expect(await status('/api/channels/ops/messages', { author: 'ana', text: '' })).toEqual([
      400,
      'bad_text',
    ]);
    expect(await status('/api/channels/bad%20id/messages', { author: 'ana', text: 'x' })).toEqual([
      400,
      'bad_channel_id',
    ]);
    expect(await status('/api/channels/ops/commands', { name: 'rm -rf' })).toEqual([400, 'bad_command']);
    expect(await status('/api/channels/ops/commands', { name: 'context', user: 'x'.repeat(101) })).toEqual([
      400,
      'bad_user',
    ]);
    for (const body of [[1, 2], 'text', null, 42]) {
      expect(await status('/api/channels/ops/messages', body)).toEqual([400, 'bad_json']);
    }
    for (const author of ['ana\nSYSTEM', 'a\u2028b', 'evil\u202Eoi', 'x'.repeat(101), '   ']) {
      expect(await status('/api/channels/ops/messages', { author, text: 'x' }), author).toEqual([
        400,
        'bad_author',
      ]);
    }
    expect(
      await status('/api/channels/ops/messages', { author: 'ana', text: 'x', id: 'i'.repeat(257) }),
    ).toEqual([400, 'bad_id']);
    expect(await status('/api/channels/ops/messages', { author: 'ana', text: 'x', id: 7 })).toEqual([
      400,
      'bad_id',
    ]);
    for (const id of ['.', '..']) {
      const res = await post('/api/channels/ops/messages', { author: 'ana', text: 'x', id });
      expect(res.status, id).toBe(400);
      expect(await res.json()).toEqual({
        code: 'bad_id',
        error: expect.stringContaining('URL parsing drops a "." or ".." path segment'),
      });
    }
    for (const body of [
      { author: 'ana', text: 'a\u0000b' },
      { author: 'a\u0000', text: 'x' },
      { author: 'ana', text: 'x', id: 'i\u0000' },
    ]) {
      expect(await status('/api/channels/ops/messages', body)).toEqual([400, 'nul_character']);
    }
    // A body with several faults gets one answer: the id first, then what no store keeps as sent
    // (NUL, a lone surrogate), then the fields' shapes.
    for (const [body, code] of [
      [{ author: 7, text: 'a\u0000b' }, 'nul_character'],
      [{ author: '', text: 'a\ud800' }, 'lone_surrogate'],
      [{ author: 'a\u0000', text: 'x', id: '' }, 'bad_id'],
      [{ text: '' }, 'bad_author'],
      [{ author: 'ana', text: '   ', id: 'ok' }, 'bad_text'],
    ] as const) {
      expect(await status('/api/channels/ops/messages', body), JSON.stringify(body)).toEqual([400, code]);
    }
    expect(received).toEqual([]);
    // 256 characters is still an id.
    expect(
      (await post('/api/channels/ops/messages', { author: 'ana', text: 'x', id: 'i'.repeat(256) })).status,
    ).toBe(200);
  });

  it('answers 2xx only for an archived message: 503 with Retry-After when the store failed, 409 for a reused id', async () => {
    next = { reply: null, archived: 'failed' };
    const down = await post('/api/channels/ops/messages', { author: 'ana', text: 'hello', id: 'm-1' });
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(await down.json()).toMatchObject({ code: 'store_unavailable' });

    next = { reply: null, archived: 'duplicate', original: { text: 'hello', reply: 'hi ana' } };
    const again = await post('/api/channels/ops/messages', { author: 'ana', text: 'hello', id: 'm-1' });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ reply: 'hi ana', id: 'm-1', duplicate: true });
    const reused = await post('/api/channels/ops/messages', { author: 'ana', text: 'other', id: 'm-1' });
    expect(reused.status).toBe(409);
    expect(await reused.json()).toMatchObject({ code: 'id_conflict' });

    next = { reply: null, archived: 'stored', failedAfterStore: true };
    const half = await post('/api/channels/ops/messages', { author: 'ana', text: 'late', id: 'm-2' });
    expect(half.status).toBe(200);
    expect(await half.json()).toEqual({ reply: null, id: 'm-2', code: 'turn_failed' });
  });

  it('stops gracefully: a request in hand is answered, a new one gets 503, event streams end', async () => {
    let release: (result: TurnResult) => void = () => {};
    let arrived: () => void = () => {};
    const inHand = new Promise<void>((resolve) => (arrived = resolve));
    const paused = new WebAdapter({ port: 0 });
    await paused.start({
      onMessage: () => {
        arrived();
        return new Promise<TurnResult>((resolve) => (release = resolve));
      },
      onCommand: async () => 'done',
    });
    const stream = await fetch(`${paused.url}/api/channels/ops/events`);
    const body = { method: 'POST', headers: { 'content-type': 'application/json' } };
    const first = fetch(`${paused.url}/api/channels/ops/messages`, {
      ...body,
      body: JSON.stringify({ author: 'ana', text: 'hello' }),
    });
    await inHand;
    await paused.pause();
    // The stream ends rather than holding the stop.
    expect(await stream.text()).toContain('event: ready');
    // Still listening while the turns in hand finish: a new request is answered 503, and its
    // connection closed by the server (never reset under the client).
    const late = await fetch(`${paused.url}/api/channels/ops/messages`, {
      ...body,
      body: JSON.stringify({ author: 'ana', text: 'too late' }),
    });
    expect([late.status, ((await late.json()) as { code?: string }).code]).toEqual([503, 'shutting_down']);
    expect(late.headers.get('connection')).toBe('close');
    const stopping = paused.stop();
    release({ reply: 'answered while stopping', archived: 'stored' });
    const res = await first;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ reply: 'answered while stopping' });
    await stopping;
    await expect(fetch(`${paused.url}/api/channels/ops/messages`, body)).rejects.toThrow();
  });

  it('runs commands', async () => {
    const res = await post('/api/channels/ops/commands', {
      name: 'compact',
      args: 'the deploy',
      user: 'ana',
    });
    expect(await res.json()).toEqual({ reply: 'compact of web:ops' });
    expect(commands[0]).toMatchObject({ name: 'compact', args: 'the deploy', userId: 'ana' });
    // Without a user the command is the web's; args that are not text are no args.
    await post('/api/channels/ops/commands', { name: 'context', args: 42 });
    expect(commands[1]).toMatchObject({ name: 'context', args: '', userId: 'web' });
  });

  it('turns DELETE and PUT of a message into changes of web:<id>, applied or spooled before it answers 2xx', async () => {
    const events = await EventStreamReader.open(`${web.url}/api/channels/ops/events`);
    const removed = await fetch(`${web.url}/api/channels/ops/messages/m-1`, { method: 'DELETE' });
    expect(removed.status).toBe(200);
    expect(await removed.json()).toEqual({ id: 'm-1', deleted: true });
    await events.until('event: deleted');
    expect(events.events('deleted')).toEqual([{ type: 'deleted', platformMessageId: 'm-1' }]);
    const edited = await fetch(`${web.url}/api/channels/ops/messages/m-2`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'the new text' }),
    });
    expect(edited.status).toBe(200);
    expect(await edited.json()).toEqual({ id: 'm-2', edited: true });
    await events.until('event: edited');
    expect(events.events('edited')).toEqual([
      { type: 'edited', platformMessageId: 'm-2', text: 'the new text' },
    ]);
    expect(changes).toEqual([
      {
        kind: 'deleted',
        platform: 'web',
        channelKey: 'web:ops',
        platformMessageIds: ['m-1'],
        ts: expect.any(String),
      },
      {
        kind: 'edited',
        platform: 'web',
        channelKey: 'web:ops',
        platformMessageId: 'm-2',
        text: 'the new text',
        ts: expect.any(String),
      },
    ]);
    await events.close();

    // Bad input is refused before the bot hears of it.
    const code = async (res: Response) => [res.status, ((await res.json()) as { code: string }).code];
    const put = (path: string, body: string, type = 'application/json') =>
      fetch(`${web.url}${path}`, { method: 'PUT', headers: { 'content-type': type }, body });
    expect(await code(await put('/api/channels/ops/messages/m-2', JSON.stringify({ text: ' ' })))).toEqual([
      400,
      'bad_text',
    ]);
    expect(
      await code(await put('/api/channels/ops/messages/m-2', JSON.stringify({ text: 'a\u0000b' }))),
    ).toEqual([400, 'nul_character']);
    expect(await code(await put('/api/channels/ops/messages/m-2', 'text=x', 'text/plain'))).toEqual([
      415,
      'not_json',
    ]);
    expect(
      await code(
        await fetch(`${web.url}/api/channels/ops/messages/${'x'.repeat(300)}`, { method: 'DELETE' }),
      ),
    ).toEqual([400, 'bad_id']);
    expect(
      await code(await fetch(`${web.url}/api/channels/o%20ps/messages/m-1`, { method: 'DELETE' })),
    ).toEqual([400, 'bad_channel_id']);
    // Another site's page: refused in loopback mode, as a POST is.
    const foreign = await fetch(`${web.url}/api/channels/ops/messages/m-1`, {
      method: 'DELETE',
      headers: { origin: 'https://evil.example' },
    });
    expect(await code(foreign)).toEqual([403, 'foreign_origin']);
    expect(changes).toHaveLength(2);

    // Neither applied nor spooled: 503 with Retry-After, to send again.
    changesFail = true;
    const down = await fetch(`${web.url}/api/channels/ops/messages/m-1`, { method: 'DELETE' });
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(await down.json()).toMatchObject({ code: 'store_unavailable' });
  });

  it('refuses "." and ".." as ids, which no DELETE can name, and takes every other id back by its URL', async () => {
    // URL parsing drops a dot segment before any route sees it, percent-encoded (`%2e`) too, and
    // `encodeURIComponent` leaves dots as they are: a DELETE of "." or ".." never reaches the bot.
    const raw = (path: string) =>
      withHost(`${web.url}${path}`, new URL(web.url).host, { method: 'DELETE' }).then((r) => r.status);
    for (const segment of ['.', '..', '%2e', '%2E', '%2e%2E', '.%2e']) {
      expect(await raw(`/api/channels/ops/messages/${segment}`), segment).toBe(404);
    }
    expect(
      (await fetch(`${web.url}/api/channels/ops/messages/${encodeURIComponent('..')}`, { method: 'DELETE' }))
        .status,
    ).toBe(404);
    expect(changes).toEqual([]);
    // Every id a POST takes comes back whole through the path, dots and percent signs included.
    const ids = ['...', '%2e', '%2E', '.%2e', './', '../x', 'a/b', '%', '%25', '?#', ' x ', 'é😀'];
    for (const id of ids) {
      expect(
        (await post('/api/channels/ops/messages', { author: 'ana', text: 'quiet', id })).status,
        id,
      ).toBe(200);
      const res = await fetch(`${web.url}/api/channels/ops/messages/${encodeURIComponent(id)}`, {
        method: 'DELETE',
      });
      expect(res.status, id).toBe(200);
    }
    expect(changes.map((change) => change.kind === 'deleted' && change.platformMessageIds[0])).toEqual(ids);
  });

  it('refuses a lone surrogate with 400, and the retry of the same body with 400 again, never 409', async () => {
    // A bot as the port describes it, over a store that keeps UTF-8 (as Postgres does): a lone
    // surrogate would be archived as U+FFFD, so the retry would differ from what was kept.
    const archived = new Map<string, string>();
    const seen: InboundMessage[] = [];
    const bot = new WebAdapter({ port: 0 });
    await bot.start({
      onMessage: async (message) => {
        seen.push(message);
        const before = archived.get(message.platformMessageId);
        if (before !== undefined)
          return { reply: null, archived: 'duplicate', original: { text: before, reply: null } };
        archived.set(message.platformMessageId, Buffer.from(message.text, 'utf8').toString('utf8'));
        return { reply: null, archived: 'stored' };
      },
      onCommand: async () => 'done',
      onMessageChange: async () => ({ outcome: 'applied' }),
    });
    const send = async (method: string, path: string, body: string) => {
      const res = await fetch(`${bot.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: res.status, ...((await res.json()) as { code?: string; error?: string }) };
    };
    try {
      // The wire form of each: a JSON escape of an unpaired surrogate, high or low.
      const bodies = [
        '{"author":"ana","text":"a\\ud800b","id":"s-1"}',
        '{"author":"ana","text":"\\udfff","id":"s-2"}',
        '{"author":"an\\udbffa","text":"x","id":"s-3"}',
        '{"author":"ana","text":"x","id":"s-\\udc00"}',
      ];
      for (const body of bodies) {
        for (const attempt of ['first', 'retry']) {
          const answer = await send('POST', '/api/channels/ops/messages', body);
          expect([answer.status, answer.code], `${attempt} ${body}`).toEqual([400, 'lone_surrogate']);
        }
      }
      expect(await send('POST', '/api/channels/ops/messages', bodies[0] ?? '')).toMatchObject({
        error: expect.stringContaining('"text" contains an unpaired UTF-16 surrogate'),
      });
      const edit = await send('PUT', '/api/channels/ops/messages/m-1', '{"text":"b\\ud83d"}');
      expect([edit.status, edit.code]).toEqual([400, 'lone_surrogate']);
      expect(seen).toEqual([]);
      // A surrogate pair is one character: taken, and its retry is the duplicate it should be.
      const pair = '{"author":"ana","text":"a\\ud83d\\ude00b","id":"s-5"}';
      expect((await send('POST', '/api/channels/ops/messages', pair)).status).toBe(200);
      expect((await send('POST', '/api/channels/ops/messages', pair)).status).toBe(200);
      expect(seen.map((m) => m.text)).toEqual(['a😀b', 'a😀b']);
    } finally {
      await bot.stop();
    }
  });

  it('answers DELETE and PUT with what the bot says the change reached, and streams the take-back until it is complete', async () => {
    const events = await EventStreamReader.open(`${web.url}/api/channels/ops/events`);
    /** Everything published before this is on the stream once the marker is. */
    let marks = 0;
    const streamed = async (type: string) => {
      const mark = `mark-${++marks}`;
      web.publish('web:ops', { type: 'mark', mark });
      await events.until(mark);
      return events.events(type);
    };
    const remove = (id: string) => fetch(`${web.url}/api/channels/ops/messages/${id}`, { method: 'DELETE' });
    try {
      const reached = { messages: 2, memories: 1, checkpoints: 0, summaries: 1 };
      changeResult = { outcome: 'applied', takeBack: 'tb-1', reached, pending: 1 };
      const removed = await remove('m-1');
      expect(removed.status).toBe(200);
      expect(await removed.json()).toEqual({
        id: 'm-1',
        deleted: true,
        outcome: 'applied',
        takeBack: 'tb-1',
        reached,
        pending: 1,
      });
      expect(await streamed('deleted')).toEqual([
        { type: 'deleted', platformMessageId: 'm-1', takeBack: 'tb-1', pending: 1 },
      ]);

      changeResult = { outcome: 'spooled' };
      const edited = await fetch(`${web.url}/api/channels/ops/messages/m-2`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'the new text' }),
      });
      expect(edited.status).toBe(200);
      expect(await edited.json()).toEqual({ id: 'm-2', edited: true, outcome: 'spooled' });
      expect(await streamed('edited')).toEqual([
        { type: 'edited', platformMessageId: 'm-2', text: 'the new text' },
      ]);

      // Never archived: 404, and the stream shows nothing (the marker after it arrives, it does not).
      changeResult = { outcome: 'unknown' };
      const unknown = await remove('m-9');
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual({
        code: 'unknown_message',
        error: 'Ebb never archived a message m-9 in this channel; nothing was changed',
      });
      expect(await streamed('deleted')).toHaveLength(1);
      expect(changes.map((change) => change.kind)).toEqual(['deleted', 'edited', 'deleted']);
    } finally {
      await events.close();
    }
  });

  it('in loopback mode refuses what a page of another site makes the browser send, and calls nothing', async () => {
    const code = async (res: Response) => [res.status, ((await res.json()) as { code: string }).code];
    // A plain `<form enctype="text/plain">` of another site: it needs no preflight, so a browser sends it.
    const form = await fetch(`${web.url}/api/channels/ops/messages`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: 'https://evil.example' },
      body: '{"author":"ana","text":"hi @ebb","x":"="}',
    });
    expect(await code(form)).toEqual([403, 'foreign_origin']);
    const compact = await fetch(`${web.url}/api/channels/ops/commands`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://localhost:5173' },
      body: JSON.stringify({ name: 'compact' }),
    });
    expect(await code(compact)).toEqual([403, 'foreign_origin']);
    // A script (no Origin) must say its body is JSON.
    const untyped = await fetch(`${web.url}/api/channels/ops/messages`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ author: 'ana', text: 'hi' }),
    });
    expect(await code(untyped)).toEqual([415, 'not_json']);
    // A DNS-rebinding page reaches 127.0.0.1 under its own name: refused, reads included.
    for (const [method, path, body] of [
      ['POST', '/api/channels/ops/messages', JSON.stringify({ author: 'ana', text: 'hi' })],
      ['GET', '/api/channels/ops/events', undefined],
    ] as const) {
      const rebound = await withHost(`${web.url}${path}`, 'rebound.evil.example', {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body ? { body } : {}),
      });
      expect([rebound.status, JSON.parse(rebound.body).code], path).toEqual([403, 'foreign_host']);
    }
    expect(received).toEqual([]);
    expect(commands).toEqual([]);

    // What the dashboard sends: same origin, JSON. And a script by any loopback name.
    const own = await fetch(`${web.url}/api/channels/ops/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', origin: web.url },
      body: JSON.stringify({ author: 'ana', text: 'from the dashboard' }),
    });
    expect(own.status).toBe(200);
    const port = new URL(web.url).port;
    for (const host of [`localhost:${port}`, 'localhost', `[::1]:${port}`]) {
      const local = await withHost(`${web.url}/api/channels/ops/commands`, host, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'context' }),
      });
      expect(local.status, host).toBe(200);
    }
    expect(received.map((m) => m.text)).toEqual(['from the dashboard']);
  });

  it('shows a posted message on the stream once it is archived, once: the same id again shows nothing', async () => {
    // A bot as the port describes it: it archives, then (answering) types and sends; an id it has
    // archived is a duplicate, and a message it could not archive is `failed`.
    const archived = new Map<string, string>();
    let storeUp = true;
    let archiveGate = Promise.resolve();
    let arrived: () => void = () => {};
    const bot = new WebAdapter({ port: 0 });
    await bot.start({
      onMessage: async (message) => {
        arrived();
        await archiveGate;
        const before = archived.get(message.platformMessageId);
        if (before !== undefined)
          return { reply: null, archived: 'duplicate', original: { text: before, reply: null } };
        if (!storeUp) return { reply: null, archived: 'failed' };
        archived.set(message.platformMessageId, message.text);
        if (message.text === 'quiet') return { reply: null, archived: 'stored' };
        await bot.typing(message.channelKey);
        await bot.send(message.channelKey, `you said ${message.text}`);
        return { reply: `you said ${message.text}`, archived: 'stored' };
      },
      onCommand: async () => 'done',
    });
    const stream = await EventStreamReader.open(`${bot.url}/api/channels/ops/events`);
    const send = (text: string, id: string) =>
      fetch(`${bot.url}/api/channels/ops/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ author: 'ana', text, id }),
      }).then((r) => r.json());
    /** Everything published before this is on the stream once the marker is. */
    let marks = 0;
    const seen = async () => {
      const mark = `mark-${++marks}`;
      bot.publish('web:ops', { type: 'mark', mark });
      await stream.until(mark);
      return stream.events('message').map((e) => `${e.role} ${e.text}`);
    };
    try {
      // Not shown while it waits to be archived.
      let open: () => void = () => {};
      archiveGate = new Promise((resolve) => (open = resolve));
      const inHand = new Promise<void>((resolve) => (arrived = resolve));
      const first = send('hello', 'm-1');
      await inHand;
      expect(await seen()).toEqual([]);
      open();
      expect(await first).toEqual({ reply: 'you said hello', id: 'm-1' });
      expect(await send('hello', 'm-1')).toMatchObject({ duplicate: true });
      expect(await send('quiet', 'm-2')).toEqual({ reply: null, id: 'm-2' });
      storeUp = false;
      expect(await send('lost', 'm-3')).toMatchObject({ code: 'store_unavailable' });
      expect(await seen()).toEqual(['user hello', 'assistant you said hello', 'user quiet']);
    } finally {
      await stream.close();
      await bot.stop();
    }
  });

  it('streams the channel’s messages and published events, and only that channel’s', async () => {
    const stream = await EventStreamReader.open(`${web.url}/api/channels/ops/events`);
    await post('/api/channels/other/messages', { author: 'bo', text: 'elsewhere' });
    await post('/api/channels/ops/messages', { author: 'ana', text: 'hello' });
    web.publish('web:ops', { type: 'compaction', event: 'compaction.completed', tier: 'background' });
    await stream.until('compaction.completed');
    expect(stream.text).toContain('"text":"hello"');
    expect(stream.text).toContain('"text":"you said hello"');
    expect(stream.text).not.toContain('elsewhere');
    await stream.close();
  });
});

describe('WebAdapter with an API token', () => {
  it('refuses the channel API without the token and serves it with it', async () => {
    const web = new WebAdapter({ port: 0, access: { adminToken: 'secret-token' } });
    await web.start({
      onMessage: async () => ({ reply: 'ok', archived: 'stored' }),
      onCommand: async () => 'done',
    });
    try {
      const body = JSON.stringify({ author: 'ana', text: 'hi' });
      const headers = { 'content-type': 'application/json' };
      const denied = await fetch(`${web.url}/api/channels/x/messages`, { method: 'POST', headers, body });
      expect(denied.status).toBe(401);
      const allowed = await fetch(`${web.url}/api/channels/x/messages`, {
        method: 'POST',
        headers: { ...headers, authorization: 'Bearer secret-token' },
        body,
      });
      expect(await allowed.json()).toMatchObject({ reply: 'ok' });
      expect((await fetch(`${web.url}/api/channels/x/events`)).status).toBe(401);
    } finally {
      await web.stop();
    }
  });

  it('rate limits guessing the token on the dashboard, by ?token= or Bearer, with its rate limit', async () => {
    const web = new WebAdapter({
      port: 0,
      access: { adminToken: 'secret-token' },
      rateLimit: { perMinute: 60, burst: 2, now: () => 0 },
    });
    await web.start({
      onMessage: async () => ({ reply: 'ok', archived: 'stored' }),
      onCommand: async () => 'done',
    });
    try {
      const guesses = [
        await fetch(`${web.url}/?token=guess-1`, { redirect: 'manual' }),
        await fetch(`${web.url}/`, { headers: { authorization: 'Bearer guess-2' } }),
        await fetch(`${web.url}/?token=guess-3`, { redirect: 'manual' }),
        await fetch(`${web.url}/`, { headers: { authorization: 'Bearer guess-4' } }),
      ];
      expect(guesses.map((r) => r.status)).toEqual([401, 401, 429, 429]);
      expect(guesses[2]?.headers.get('retry-after')).toBe('1');
    } finally {
      await web.stop();
    }
  });
});

describe('WebAdapter bounded input', () => {
  let web: WebAdapter;
  let messages = 0;
  /** The rate limiter's clock: it moves only when a test moves it. */
  let now = 0;
  let log: RecordingLogger;

  beforeEach(async () => {
    messages = 0;
    now = 0;
    log = new RecordingLogger();
    web = new WebAdapter({
      port: 0,
      maxBodyBytes: 1024,
      rateLimit: { perMinute: 60, burst: 3, now: () => now },
      logger: log,
    });
    await web.start({
      onMessage: async () => {
        messages++;
        return { reply: 'ok', archived: 'stored' };
      },
      onCommand: async () => 'done',
    });
  });

  afterEach(() => web.stop());

  it('answers 413 to a body over the limit, declared or streamed, and calls nothing', async () => {
    const big = JSON.stringify({ author: 'ana', text: 'x'.repeat(2_000) });
    const declared = await fetch(`${web.url}/api/channels/ops/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toMatchObject({ code: 'body_too_large' });
    // Chunked: no Content-Length, so it is counted as it is read.
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 8; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(512)));
        controller.close();
      },
    });
    const streamed = await fetch(`${web.url}/api/channels/ops/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chunks,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(messages).toBe(0);
  });

  it('checks the channel id on every channel route, the event stream included', async () => {
    for (const path of [
      '/api/channels/a%20b/events',
      '/api/channels/a%0Ab/events',
      `/api/channels/${'x'.repeat(101)}/events`,
    ]) {
      const res = await fetch(`${web.url}${path}`);
      expect(res.status, path).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'bad_channel_id' });
    }
  });

  it('rate limits each client with 429 and Retry-After', async () => {
    const send = () =>
      fetch(`${web.url}/api/channels/ops/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ author: 'ana', text: 'hi' }),
      });
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await send());
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    expect(answers[3]?.headers.get('retry-after')).toBe('1');
    expect(messages).toBe(3);
    // A second later one request's worth has refilled, and no more.
    now += 1_000;
    expect([(await send()).status, (await send()).status]).toEqual([200, 429]);
    expect(messages).toBe(4);
  });

  it('logs a client that meets the limit once a minute, not once per refused request', async () => {
    const send = () =>
      fetch(`${web.url}/api/channels/ops/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ author: 'ana', text: 'hi' }),
      }).then((r) => r.status);
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push(await send());
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    expect(log.events('web.rate_limited')).toEqual([
      {
        level: 'warn',
        fields: {
          event: 'web.rate_limited',
          client: expect.stringMatching(/127\.0\.0\.1$/),
          limit: 'api_requests',
          perMinute: 60,
          burst: 3,
          retryAfterMs: 1_000,
        },
        message: expect.stringContaining('rate_limit_per_minute'),
      },
    ]);
    // 59 s later the bucket has refilled: 3 more pass, and the 57 refused after them add no line.
    now += 59_000;
    const later = [];
    for (let i = 0; i < 60; i++) later.push(await send());
    expect(later.filter((status) => status === 429)).toHaveLength(57);
    expect(log.events('web.rate_limited')).toHaveLength(1);
    // A minute after the first line, the next refusal is logged again.
    now += 1_000;
    expect([await send(), await send()]).toEqual([200, 429]);
    expect(log.events('web.rate_limited')).toHaveLength(2);
  });
});
