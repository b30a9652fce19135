/**
 * The web channel: a JSON API and a server-sent event stream, so a newcomer (or a script) can talk
 * to Ebb without Slack or Discord, and watch a conversation ebb.
 *
 *   POST /api/channels/:id/messages   {"author": "…", "text": "…", "id"?: "…"} → {"reply": "…" | null}
 *   DELETE /api/channels/:id/messages/:messageId                 → {"id": "…", "deleted": true, "outcome": "…", …}
 *   PUT  /api/channels/:id/messages/:messageId  {"text": "…"}     → {"id": "…", "edited": true, "outcome": "…", …}
 *   POST /api/channels/:id/commands   {"name": "context" | "compact", "args"?: "…", "user"?: "…"} → {"reply": "…"}
 *   GET  /api/channels/:id/events     text/event-stream of the channel's messages and compaction events
 *
 * Channel `:id` maps to the key `web:<id>`. Other routes (health, metrics, the dashboard) are added by
 * the composition root on `app`; every route but `/healthz` follows the access rule of `access.ts`.
 *
 * Bounded input (the guards of `guards.ts`): a body larger than `maxBodyBytes` is answered `413 body_too_large` before it is
 * buffered (a declared length is refused from the header; a chunked body is counted as it is read),
 * and each client is rate limited (`429 rate_limited` with `Retry-After`): every request to the channel
 * API, and every credential refused on any route but `/healthz`.
 *
 * Bodies and params are checked at the edge by the zod schemas of `channel-requests.ts` (a handler
 * gets a typed body or the refusal that answers it). Bodies are JSON, sent as
 * `Content-Type: application/json` (`415 not_json` otherwise): an HTML form,
 * which any page can post without asking, cannot send that type, and a script of another site that
 * sets it must first pass a CORS preflight, which Ebb never grants.
 * A message shows on the event stream once it is archived, once (`archived-echoes.ts`).
 *
 * A 2xx answer to a message means it is archived; the caller retries anything else with the same
 * `id`, which is idempotent: 503 `store_unavailable` (not archived; `Retry-After`), 503
 * `shutting_down` (this process is stopping: the message came after the stop began, or its turn had
 * not begun when the grace period ran out; not archived; `Retry-After`), 409 `id_conflict` (the id
 * was used for another text).
 * A DELETE or PUT of a message (by the `id` it was posted with, or the bot's reply's `id` from the
 * stream) takes it back as a platform's deletion or edit does: the channel's `[privacy]` policy
 * decides what it reaches. A 2xx answer means the change is applied, or spooled while the store is
 * away (applied in order after it); its `outcome` says which, and `takeBack`, `reached` and `pending`
 * (summaries still being written again) what it reached. An id the archive never held changes
 * nothing: 404 `unknown_message`, and nothing on the stream. 503 `store_unavailable`
 * (`Retry-After`) when it could be neither; a retry is always safe.
 * A POST's `"id"` cannot be `.` or `..`: URL parsing drops those path segments (`%2e` too), so no
 * DELETE or PUT could name the message.
 * Errors are `{"error": "…", "code": "…"}`, `code` one of `WEB_ERROR_CODES` (`errors.ts`).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import {
  type MessageChangeResult,
  type PlatformAdapter,
  type PlatformHandlers,
  settleWithin,
  type TurnResult,
} from '@ebb/core';
import { type ServerType, serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { ArchivedEchoes } from './archived-echoes.js';
import {
  bodyOf,
  CHANNEL_ID,
  CHANNEL_ID_RULE,
  CommandCall,
  MessageEdit,
  messageIdOf,
  PostedMessage,
} from './channel-requests.js';
import { type WebErrorCode, webError } from './errors.js';
import { DEFAULT_GUARDS, type GuardOptions, mountGuards } from './guards.js';
import { traceRequests } from './request-spans.js';

/** Where to listen, and the guards' options (`guards.ts`): access, body limit, rate limit. */
export interface WebAdapterOptions extends GuardOptions {
  readonly host?: string;
  /** 0 picks a free port (tests). */
  readonly port?: number;
}

export const DEFAULT_WEB_ADAPTER = {
  host: '127.0.0.1',
  port: 3000,
  ...DEFAULT_GUARDS,
} as const satisfies Required<WebAdapterOptions>;

/** An event of a web channel's stream. */
export interface WebChannelEvent {
  readonly type: string;
  readonly [field: string]: unknown;
}

/** Seconds a caller waits before sending a message the store could not keep again. */
const RETRY_AFTER_SECONDS = 5;
/** How long `stop` lets answered requests flush before it ends their connections. */
const FLUSH_MS = 2_000;

export class WebAdapter implements PlatformAdapter {
  readonly platform = 'web' as const;
  /** The HTTP app: the composition root mounts health, metrics and the dashboard here. */
  readonly app = new Hono();
  readonly #options: WebAdapterOptions;
  readonly #events = new EventEmitter<Record<string, [WebChannelEvent]>>();
  /** Posted messages waiting to be archived before they show on the stream. */
  readonly #echoes = new ArchivedEchoes();
  #handlers: PlatformHandlers | undefined;
  #server: ServerType | undefined;
  #closed: Promise<void> | undefined;
  #url: string | undefined;
  /** Aborted by `pause`: new requests get 503 and open event streams end. */
  readonly #stopping = new AbortController();

  constructor(options: WebAdapterOptions = {}) {
    this.#options = options;
    this.#events.setMaxListeners(0);
    this.#routes();
  }

  /** Aborted when the server begins to stop: the dashboard's event streams end with the channel's. */
  get stopping(): AbortSignal {
    return this.#stopping.signal;
  }

  /** The bound address, once started. */
  get url(): string {
    if (!this.#url) throw new Error('the web channel is not started');
    return this.#url;
  }

  async start(handlers: PlatformHandlers): Promise<void> {
    this.#handlers = handlers;
    const host = this.#options.host ?? DEFAULT_WEB_ADAPTER.host;
    await new Promise<void>((resolve, reject) => {
      const server = serve(
        { fetch: this.app.fetch, hostname: host, port: this.#options.port ?? DEFAULT_WEB_ADAPTER.port },
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
    this.#echoes.acting(channelKey);
    this.publish(channelKey, { type: 'message', role: 'assistant', author: 'ebb', text, platformMessageId });
    return { platformMessageId };
  }

  async typing(channelKey: string): Promise<void> {
    this.#echoes.acting(channelKey);
    this.publish(channelKey, { type: 'typing' });
  }

  /** Sends an event to the channel's stream subscribers (the bot's compaction events come through here). */
  publish(channelKey: string, event: WebChannelEvent): void {
    this.#events.emit(channelKey, event);
  }

  /** Takes no new requests (503 `shutting_down`) and ends the event streams; requests in hand go on. */
  async pause(): Promise<void> {
    const server = this.#server;
    if (!server || this.#stopping.signal.aborted) return;
    // Keeps listening: every request from now on is answered 503 with `Connection: close`, so each
    // connection is closed by us after an answer. Closing the listener here (Node's `close` also
    // drops idle keep-alive connections) raced clients that had just written a request on one: a reset.
    this.#stopping.abort();
  }

  async stop(): Promise<void> {
    await this.pause();
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    this.#events.removeAllListeners();
    // The turns are done (the bot drained them): stop listening, let their answers flush, then end
    // any connection left.
    this.#closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await settleWithin(this.#closed, FLUSH_MS);
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    await this.#closed;
  }

  /**
   * Hands a deletion or an edit of the message `id` to the bot and answers: 200 once it is applied or
   * spooled, with what the bot says it reached (the stream shows it, with the take-back and the
   * summaries still pending); `404 unknown_message` when the archive never held it (the stream shows
   * nothing); `503 starting` before the bot started, `503 store_unavailable` when it could not be
   * kept. A handler that answers nothing (an older one) gets the bare `{ id, deleted | edited }`.
   */
  async #takeBack(
    c: Context,
    id: string,
    change: { readonly kind: 'deleted' } | { readonly kind: 'edited'; readonly text: string },
  ): Promise<Response> {
    const handlers = this.#handlers;
    if (!handlers?.onMessageChange) return webError(c, 503, 'starting', 'Ebb is starting');
    const where = {
      platform: 'web' as const,
      channelKey: `web:${c.req.param('id')}`,
      ts: new Date().toISOString(),
    };
    let result: MessageChangeResult | undefined;
    try {
      result = await handlers.onMessageChange(
        change.kind === 'deleted'
          ? { kind: 'deleted', ...where, platformMessageIds: [id] }
          : { kind: 'edited', ...where, platformMessageId: id, text: change.text },
      );
    } catch {
      c.header('Retry-After', String(RETRY_AFTER_SECONDS));
      return webError(c, 503, 'store_unavailable', 'the change was not applied; send it again');
    }
    if (result?.outcome === 'unknown')
      return webError(
        c,
        404,
        'unknown_message',
        `Ebb never archived a message ${id} in this channel; nothing was changed`,
      );
    const { takeBack, reached, pending } = result ?? {};
    // Until `pending` is 0 the take-back is still rewriting summaries: a client shows it as under way.
    const progress = {
      ...(takeBack === undefined ? {} : { takeBack }),
      ...(pending === undefined ? {} : { pending }),
    };
    this.publish(where.channelKey, {
      type: change.kind,
      platformMessageId: id,
      ...(change.kind === 'edited' ? { text: change.text } : {}),
      ...progress,
    });
    if (!result) return c.json({ id, [change.kind]: true });
    return c.json({
      id,
      [change.kind]: true,
      outcome: result.outcome,
      ...progress,
      ...(reached === undefined ? {} : { reached }),
    });
  }

  #routes(): void {
    const app = this.app;
    // Registered before the routes, so they run first.
    app.use('*', traceRequests());
    app.use('*', async (c, next) => {
      if (!this.#stopping.signal.aborted) {
        await next();
        // Answered after the stop began: the client opens its next connection elsewhere.
        if (this.#stopping.signal.aborted) c.header('Connection', 'close');
        return;
      }
      c.header('Connection', 'close');
      return shuttingDown(c);
    });
    mountGuards(app, this.#options);
    // One rule for the channel id on every channel route, the event stream included.
    app.use('/api/channels/:id/*', async (c, next) => {
      if (!CHANNEL_ID.test(c.req.param('id') ?? ''))
        return webError(c, 400, 'bad_channel_id', CHANNEL_ID_RULE);
      return next();
    });
    app.post('/api/channels/:id/messages', async (c) => {
      const id = c.req.param('id');
      const body = await bodyOf(c, PostedMessage);
      if (body instanceof Response) return body;
      const { author, text, id: messageId } = body;
      const handlers = this.#handlers;
      if (!handlers) return webError(c, 503, 'starting', 'Ebb is starting');
      const channelKey = `web:${id}`;
      const platformMessageId = messageId ?? randomUUID();
      const echo = this.#echoes.add(channelKey, () =>
        this.publish(channelKey, { type: 'message', role: 'user', author, text, platformMessageId }),
      );
      let result: TurnResult | undefined;
      try {
        result = await handlers.onMessage({
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
          reportsFailure: true,
        });
      } finally {
        // Spooled counts as kept: it is archived in order once the store is back.
        this.#echoes.settle(echo, result?.archived === 'stored' || result?.archived === 'spooled');
      }
      switch (result?.archived) {
        case 'refused':
          // Taken before the stop, but its turn had not begun when the grace period ran out.
          return shuttingDown(c);
        case 'failed':
          c.header('Retry-After', String(RETRY_AFTER_SECONDS));
          return webError(
            c,
            503,
            'store_unavailable',
            'the message was not archived; send it again with the same id',
          );
        case 'duplicate':
          if (result.original && result.original.text !== text)
            return webError(
              c,
              409,
              'id_conflict',
              `id ${platformMessageId} was already used for a different text`,
            );
          return c.json({ reply: result.original?.reply ?? null, id: platformMessageId, duplicate: true });
        default:
          return c.json({
            reply: result?.reply ?? null,
            id: platformMessageId,
            // Archived, but no reply was made or kept: sending it again with the same id is answered
            // (once, as a duplicate with the reply), and never archives it twice.
            ...(result?.failedAfterStore ? { code: 'turn_failed' satisfies WebErrorCode } : {}),
          });
      }
    });

    app.delete('/api/channels/:id/messages/:messageId', async (c) => {
      const id = messageIdOf(c);
      return id instanceof Response ? id : await this.#takeBack(c, id, { kind: 'deleted' });
    });

    app.put('/api/channels/:id/messages/:messageId', async (c) => {
      const id = messageIdOf(c);
      if (id instanceof Response) return id;
      const body = await bodyOf(c, MessageEdit);
      if (body instanceof Response) return body;
      return await this.#takeBack(c, id, { kind: 'edited', text: body.text });
    });

    app.post('/api/channels/:id/commands', async (c) => {
      const id = c.req.param('id');
      const body = await bodyOf(c, CommandCall);
      if (body instanceof Response) return body;
      const handlers = this.#handlers;
      if (!handlers) return webError(c, 503, 'starting', 'Ebb is starting');
      const reply = await handlers.onCommand({
        platform: 'web',
        name: body.name,
        channelKey: `web:${id}`,
        userId: body.user,
        args: body.args,
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
        // Until the client goes away or Ebb stops.
        await new Promise<void>((resolve) => {
          stream.onAbort(resolve);
          this.#stopping.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        this.#events.off(channelKey, forward);
      });
    });
  }
}

/** `503 shutting_down`: this process is stopping; the client sends it again in a moment (to the next one). */
function shuttingDown(c: Context): Response {
  c.header('Retry-After', String(RETRY_AFTER_SECONDS));
  return webError(c, 503, 'shutting_down', 'Ebb is stopping; send this again in a moment');
}
