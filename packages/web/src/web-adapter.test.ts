import type { CommandInvocation, InboundMessage, PlatformHandlers } from '@ebb/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebAdapter } from './web-adapter.js';

describe('WebAdapter', () => {
  let web: WebAdapter;
  const received: InboundMessage[] = [];
  const commands: CommandInvocation[] = [];

  beforeEach(async () => {
    received.length = 0;
    commands.length = 0;
    web = new WebAdapter({ port: 0 });
    const handlers: PlatformHandlers = {
      onMessage: async (message) => {
        received.push(message);
        if (message.text === 'quiet') return { reply: null };
        const reply = `you said ${message.text}`;
        await web.send(message.channelKey, reply);
        return { reply };
      },
      onCommand: async (command) => {
        commands.push(command);
        return `${command.name} of ${command.channelKey}`;
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
    expect(await res.json()).toEqual({ reply: 'you said hi @ebb' });
    expect(received[0]).toMatchObject({
      platform: 'web',
      channelKey: 'web:ops',
      authorName: 'ana',
      mentionsBot: true,
      fromBot: false,
    });
    expect(await (await post('/api/channels/ops/messages', { author: 'ana', text: 'quiet' })).json()).toEqual(
      { reply: null },
    );
  });

  it('rejects bad input with a clear error and calls nothing', async () => {
    expect((await post('/api/channels/ops/messages', { text: 'no author' })).status).toBe(400);
    expect((await post('/api/channels/ops/messages', { author: 'ana', text: '' })).status).toBe(400);
    expect((await post('/api/channels/bad%20id/messages', { author: 'ana', text: 'x' })).status).toBe(400);
    expect((await post('/api/channels/ops/commands', { name: 'rm -rf' })).status).toBe(400);
    expect(received).toEqual([]);
  });

  it('runs commands', async () => {
    const res = await post('/api/channels/ops/commands', {
      name: 'compact',
      args: 'the deploy',
      user: 'ana',
    });
    expect(await res.json()).toEqual({ reply: 'compact of web:ops' });
    expect(commands[0]).toMatchObject({ name: 'compact', args: 'the deploy', userId: 'ana' });
  });

  it('streams the channel’s messages and published events, and only that channel’s', async () => {
    const controller = new AbortController();
    const stream = await fetch(`${web.url}/api/channels/ops/events`, { signal: controller.signal });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const read = async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += new TextDecoder().decode(value);
      }
    };
    void read().catch(() => {});
    await vi.waitFor(() => expect(text).toContain('event: ready'));
    await post('/api/channels/other/messages', { author: 'bo', text: 'elsewhere' });
    await post('/api/channels/ops/messages', { author: 'ana', text: 'hello' });
    web.publish('web:ops', { type: 'compaction', event: 'compaction.completed', tier: 'background' });
    await vi.waitFor(() => expect(text).toContain('compaction.completed'));
    expect(text).toContain('"text":"hello"');
    expect(text).toContain('"text":"you said hello"');
    expect(text).not.toContain('elsewhere');
    controller.abort();
  });
});

describe('WebAdapter with an API token', () => {
  it('refuses the channel API without the token and serves it with it', async () => {
    const web = new WebAdapter({ port: 0, apiToken: 'secret-token' });
    await web.start({
      onMessage: async () => ({ reply: 'ok' }),
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
      expect(await allowed.json()).toEqual({ reply: 'ok' });
      expect((await fetch(`${web.url}/api/channels/x/events`)).status).toBe(401);
    } finally {
      await web.stop();
    }
  });
});
