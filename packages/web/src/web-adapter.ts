/**
 * The web channel: a JSON API and a server-sent event stream, so a newcomer (or a script) can talk
 * to Ebb without Slack or Discord, and watch a conversation ebb.
 *
 *   POST /api/channels/:id/messages   {"author": "…", "text": "…"} → {"reply": "…" | null}
 *   POST /api/channels/:id/commands   {"name": "context" | "compact", "args"?: "…", "user"?: "…"} → {"reply": "…"}
 *   GET  /api/channels/:id/events     text/event-stream of the channel's messages and compaction events
 *
 * Channel `:id` maps to the key `web:<id>`. Other routes (health, metrics, the dashboard) are added by
 * the composition root on `app`.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { CommandName, PlatformAdapter, PlatformHandlers } from '@ebb/core';
import { type ServerType, serve } from '@hono/node-server';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { adminAuth } from './dashboard.js';

export interface WebAdapterOptions {
  readonly host?: string;
  /** 0 picks a free port (tests). */
  readonly port?: number;
  /**
   * When set, the channel API (messages, commands, events) requires it too, as the dashboard does
   * (`Authorization: Bearer`, or the dashboard's cookie). Unset: the API is open to whoever reaches the port.
   */
  readonly apiToken?: string | undefined;
}

/** An event of a web channel's stream. */
export interface WebChannelEvent {
  readonly type: string;
  readonly [field: string]: unknown;
}

const CHANNEL_ID = /^[A-Za-z0-9_.-]{1,100}$/;
const MAX_TEXT = 40_000;
const COMMANDS: readonly CommandName[] = ['context', 'compact'];

export class WebAdapter implements PlatformAdapter {
  readonly platform = 'web' as const;
  /** The HTTP app: the composition root mounts health, metrics and the dashboard here. */
  readonly app = new Hono();
  readonly #options: WebAdapterOptions;
  readonly #events = new EventEmitter<Record<string, [WebChannelEvent]>>();
  #handlers: PlatformHandlers | undefined;
  #server: ServerType | undefined;
  #url: string | undefined;

  constructor(options: WebAdapterOptions = {}) {
    this.#options = options;
    this.#events.setMaxListeners(0);
    this.#routes();
  }

  /** The bound address, once started. */
  get url(): string {
    if (!this.#url) throw new Error('the web channel is not started');
    return this.#url;
  }

  async start(handlers: PlatformHandlers): Promise<void> {
    this.#handlers = handlers;
    const host = this.#options.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      const server = serve(
        { fetch: this.app.fetch, hostname: host, port: this.#options.port ?? 3000 },
        (info: AddressInfo) => {
          this.#url = `http://${host.includes(':') ? `[${host}]` : host}:${info.port}`;
          resolve();
        },
      );
      server.once('error', reject);
      this.#server = server;
    });
  }

  async send(channelKey: string, text: string): Promise<{ platformMessageId: string }> {
    const platformMessageId = randomUUID();
    this.publish(channelKey, { type: 'message', role: 'assistant', author: 'ebb', text, platformMessageId });
    return { platformMessageId };
  }

  async typing(channelKey: string): Promise<void> {
    this.publish(channelKey, { type: 'typing' });
  }

  /** Sends an event to the channel's stream subscribers (the bot's compaction events come through here). */
  publish(channelKey: string, event: WebChannelEvent): void {
    this.#events.emit(channelKey, event);
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    this.#events.removeAllListeners();
    // Open event streams would hold close() forever: end every connection.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    await closed;
  }

  #routes(): void {
    const app = this.app;
    // Registered before the routes, so it runs first.
    if (this.#options.apiToken !== undefined) app.use('/api/channels/*', adminAuth(this.#options.apiToken));
    app.post('/api/channels/:id/messages', async (c) => {
      const id = c.req.param('id');
      if (!CHANNEL_ID.test(id))
        return c.json({ error: 'channel id: letters, digits, _ . - (at most 100)' }, 400);
      const body = await c.req.json().catch(() => undefined);
      const author = typeof body?.author === 'string' ? body.author.trim() : '';
      const text = typeof body?.text === 'string' ? body.text : '';
      if (author === '' || author.length > 100)
        return c.json({ error: '"author" must be a non-empty string' }, 400);
      if (text.trim() === '' || text.length > MAX_TEXT) {
        return c.json({ error: `"text" must be a non-empty string of at most ${MAX_TEXT} characters` }, 400);
      }
      const handlers = this.#handlers;
      if (!handlers) return c.json({ error: 'starting' }, 503);
      const channelKey = `web:${id}`;
      const platformMessageId = typeof body?.id === 'string' && body.id !== '' ? body.id : randomUUID();
      this.publish(channelKey, { type: 'message', role: 'user', author, text, platformMessageId });
      const result = await handlers.onMessage({
        platform: 'web',
        channelKey,
        platformMessageId,
        authorId: author,
        authorName: author,
        fromBot: false,
        text,
        ts: new Date().toISOString(),
        mentionsBot: /(^|\s)@ebb\b/i.test(text),
        direct: false,
      });
      return c.json({ reply: result?.reply ?? null });
    });

    app.post('/api/channels/:id/commands', async (c) => {
      const id = c.req.param('id');
      if (!CHANNEL_ID.test(id)) return c.json({ error: 'bad channel id' }, 400);
      const body = await c.req.json().catch(() => undefined);
      const name = body?.name;
      if (!COMMANDS.includes(name))
        return c.json({ error: `"name" must be one of ${COMMANDS.join(', ')}` }, 400);
      const handlers = this.#handlers;
      if (!handlers) return c.json({ error: 'starting' }, 503);
      const reply = await handlers.onCommand({
        platform: 'web',
        name,
        channelKey: `web:${id}`,
        userId: typeof body?.user === 'string' ? body.user : 'web',
        args: typeof body?.args === 'string' ? body.args : '',
      });
      return c.json({ reply });
    });

    app.get('/api/channels/:id/events', (c) => {
      const channelKey = `web:${c.req.param('id')}`;
      return streamSSE(c, async (stream) => {
        const forward = (event: WebChannelEvent) => {
          void stream.writeSSE({ event: event.type, data: JSON.stringify(event) });
        };
        this.#events.on(channelKey, forward);
        await stream.writeSSE({ event: 'ready', data: JSON.stringify({ channelKey }) });
        await new Promise<void>((resolve) => stream.onAbort(resolve));
        this.#events.off(channelKey, forward);
      });
    });
  }
}
