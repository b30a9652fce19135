/**
 * A local Slack that the real Bolt, `WebClient` and `SocketModeClient` talk to, on 127.0.0.1:
 *
 * - the Web API at `apiUrl` (`clientOptions.slackApiUrl`): `auth.test`, `chat.postMessage`,
 *   `chat.update`, `chat.delete` (the app's own messages), `chat.postEphemeral`, `apps.connections.open`, `users.info`, `conversations.info`,
 *   `reactions.add`/`remove`, `assistant.threads.setStatus`/`setSuggestedPrompts` (the AI-app
 *   surface; a reply in the thread clears its status); other methods answer `unknown_method`. Every call is recorded, tokens
 *   redacted. `fail` scripts `{ ok: false, error }` answers and `rateLimit` HTTP 429s (`faults.ts`).
 * - a Socket Mode endpoint (the URL `apps.connections.open` returns; `ws://`, not `wss://`): says
 *   `hello`, delivers `events_api` and `slash_commands` envelopes, records acks, and can drop the
 *   connection so the client has to reconnect.
 * - the Events API client side: `sendEvent` / `sendCommand` POST signed requests to an app's HTTP
 *   receiver, as Slack does (with `x-slack-retry-num` for retries).
 * - `response_url` for slash commands, recorded in `responses`.
 *
 *   const slack = await FakeSlack.start();
 *   const app = new App({ ..., clientOptions: { slackApiUrl: slack.apiUrl } });
 *   const envelopeId = slack.deliver(slack.build.channelMessage({ text: 'hi' }));
 *   await vi.waitFor(() => expect(slack.ackFor(envelopeId)).toBeDefined());
 *   await slack.close();
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { closeServer, listenOnFreePort, readBody, sendJson } from '../http.js';
import { ScriptedFaults } from '../scripted-faults.js';
import { type WebApiFault, type WebApiFaultAnswer, webApiFaultScript } from './faults.js';
import {
  type SlackEventPayload,
  SlackPayloads,
  type SlashCommandPayload,
  VERIFICATION_TOKEN,
} from './payloads.js';
import { signSlackRequest } from './signing.js';
import { callWebApi, type TokenKind, tokenKind, type WebApiArgs, type WebApiBody } from './web-api.js';
import {
  type AssistantStatusChange,
  DEFAULT_CHANNELS,
  DEFAULT_IDENTITY,
  DEFAULT_USERS,
  type EphemeralMessage,
  type FakeSlackChannel,
  type FakeSlackIdentity,
  type FakeSlackUser,
  FakeWorkspace,
  type PostedMessage,
  type SuggestedPrompts,
} from './workspace.js';

export interface FakeSlackOptions {
  /** Workspace, app and bot ids; `FAKE_SLACK`'s by default. */
  readonly identity?: Partial<FakeSlackIdentity>;
  /** People (and other bots) besides this bot; alice, bob and deploybot by default. */
  readonly users?: readonly FakeSlackUser[];
  /** #general, #random, a private #secret and alice's DM by default. */
  readonly channels?: readonly FakeSlackChannel[];
  /** Send `hello` when a Socket Mode client connects (the client waits for it). */
  readonly hello?: boolean;
}

const DEFAULTS = {
  identity: DEFAULT_IDENTITY,
  users: DEFAULT_USERS,
  channels: DEFAULT_CHANNELS,
  hello: true,
} as const satisfies Required<FakeSlackOptions>;

/** One Web API call as the fake received it. */
export interface RecordedApiCall {
  readonly index: number;
  readonly method: string;
  /** Form or JSON body merged over the query string; a `token` field reads `[redacted]`. */
  readonly args: WebApiArgs;
  /** `Bearer [redacted]` when an Authorization header was sent. */
  readonly authorization: string | undefined;
  readonly tokenKind: TokenKind;
  /** 200, or 429 for a scripted rate limit. */
  readonly status: number;
  readonly response: WebApiBody;
  /** When the fake received the call (`Date.now()`), to see how long a client waited before a retry. */
  readonly at: number;
}

/** The client's acknowledgement of an envelope: `{ envelope_id, payload }`. */
export interface RecordedAck {
  readonly envelopeId: string;
  /** The ack body: `{}` for events; the response (`{ text, response_type }`) for a slash command. */
  readonly payload: Readonly<Record<string, unknown>> | undefined;
}

/** A POST to a slash command's `response_url`. */
export interface RecordedResponse {
  readonly path: string;
  readonly body: Readonly<Record<string, unknown>>;
}

export interface DeliverOptions {
  /** `retry_attempt` of the envelope (0 for a first delivery). */
  readonly retryAttempt?: number;
  readonly retryReason?: string;
  /** Overrides the `event_id` (the same event object keeps its id by default). */
  readonly eventId?: string;
}

/** How the fake ends a Socket Mode connection. */
export type DropMode =
  /** The TCP socket is destroyed without a close frame (a network failure). */
  | 'terminate'
  /** A close frame (1001, going away) as a server restart sends. */
  | 'close'
  /** Slack's `{ type: 'disconnect', reason: 'refresh_requested' }`; the client closes and reconnects. */
  | 'refresh';

export interface SignedRequestOptions {
  readonly signingSecret: string;
  /** Sends `x-slack-retry-num` (and `x-slack-retry-reason`, `http_timeout` by default). */
  readonly retryNum?: number;
  readonly retryReason?: string;
  /** Unix seconds for `x-slack-request-timestamp`; now by default. */
  readonly timestamp?: number;
  /** Signs with a different secret, as a forger would. */
  readonly forgeSignature?: boolean;
  /** Overrides the `event_id` (events only). */
  readonly eventId?: string;
}

export interface SignedResponse {
  readonly status: number;
  readonly text: string;
  /** The body parsed as JSON, when it is JSON. */
  readonly json: unknown;
}

export interface RateLimitOptions {
  /** How many calls in a row are refused (1 by default); `Infinity` for every call from now on. */
  readonly times?: number;
  /** The `Retry-After` header, in whole seconds (1 by default). */
  readonly retryAfterSeconds?: number;
}

export class FakeSlack {
  /** The Web API base for `slackApiUrl`: `http://127.0.0.1:PORT/api/`. */
  readonly apiUrl: string;
  readonly identity: FakeSlackIdentity;
  /** Payload builders bound to this workspace. */
  readonly build: SlackPayloads;
  readonly #origin: string;
  readonly #server: Server;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #workspace: FakeWorkspace;
  readonly #hello: boolean;
  readonly #calls: RecordedApiCall[] = [];
  readonly #acks: RecordedAck[] = [];
  readonly #responses: RecordedResponse[] = [];
  readonly #tickets = new Set<string>();
  readonly #sockets = new Set<WebSocket>();
  /** Requests are Web API method names. */
  readonly #faults = new ScriptedFaults<string, WebApiFaultAnswer>('FakeSlack');
  #socketConnections = 0;

  private constructor(server: Server, options: Required<FakeSlackOptions>) {
    this.#server = server;
    const { port } = server.address() as AddressInfo;
    this.#origin = `127.0.0.1:${port}`;
    this.apiUrl = `http://${this.#origin}/api/`;
    this.identity = { ...DEFAULT_IDENTITY, ...options.identity };
    this.#workspace = new FakeWorkspace(this.identity, options.users, options.channels);
    this.#hello = options.hello;
    this.build = new SlackPayloads(
      this.#workspace,
      () => `http://${this.#origin}/commands/response/${randomBytes(8).toString('hex')}`,
    );
  }

  /** Listens on 127.0.0.1, on a free port. */
  static async start(options: FakeSlackOptions = {}): Promise<FakeSlack> {
    const merged = { ...DEFAULTS, ...options };
    let fake: FakeSlack | undefined;
    const server = createServer((req, res) => {
      if (!fake) {
        res.destroy();
        return;
      }
      fake.#handle(req, res).catch((err: unknown) => {
        if (res.headersSent) res.destroy();
        else sendSlackJson(res, 500, { ok: false, error: `fake_failure: ${String(err)}` });
      });
    });
    server.on('upgrade', (req, socket, head) => {
      if (fake) fake.#upgrade(req, socket, head);
      else socket.destroy();
    });
    await listenOnFreePort(server);
    fake = new FakeSlack(server, merged);
    return fake;
  }

  // ---- Web API -----------------------------------------------------------------------------------

  /** Every Web API call so far, oldest first. */
  get calls(): readonly RecordedApiCall[] {
    return this.#calls;
  }

  callsTo(method: string): readonly RecordedApiCall[] {
    return this.#calls.filter((c) => c.method === method);
  }

  /** Messages posted with `chat.postMessage` (as `chat.update` left them, less `chat.delete`d ones), oldest first. */
  get messages(): readonly PostedMessage[] {
    return this.#workspace.messages;
  }

  get ephemerals(): readonly EphemeralMessage[] {
    return this.#workspace.ephemerals;
  }

  /** Every `assistant.threads.setStatus` (and each status a reply cleared), oldest first. */
  get assistantStatuses(): readonly AssistantStatusChange[] {
    return this.#workspace.assistantStatuses;
  }

  /** The status line shown under an assistant thread now, if any. */
  assistantStatus(channel: string, threadTs: string): string | undefined {
    return this.#workspace.assistantStatus(channel, threadTs);
  }

  /** Every `assistant.threads.setSuggestedPrompts`, oldest first. */
  get suggestedPrompts(): readonly SuggestedPrompts[] {
    return this.#workspace.suggestedPrompts;
  }

  /** The bot's reactions currently on a message. */
  reactionsOn(channel: string, ts: string): readonly string[] {
    return this.#workspace.reactionsOn(channel, ts);
  }

  /** Answers the next `times` calls of `method` with `{ ok: false, error }`. */
  fail(method: string, error: string, times = 1): this {
    return this.#script(method, { kind: 'error', error }, times);
  }

  /**
   * Answers the next `times` calls of `method` with HTTP 429, `Retry-After: retryAfterSeconds` and
   * `{ ok: false, error: 'ratelimited' }`, as Slack does. The refused calls are recorded (status 429).
   */
  rateLimit(method: string, options: RateLimitOptions = {}): this {
    const retryAfterSeconds = options.retryAfterSeconds ?? 1;
    return this.#script(method, { kind: 'rate_limit', retryAfterSeconds }, options.times ?? 1);
  }

  addUser(user: FakeSlackUser): this {
    this.#workspace.users.set(user.id, user);
    return this;
  }

  addChannel(channel: FakeSlackChannel): this {
    this.#workspace.channels.set(channel.id, channel);
    return this;
  }

  // ---- Socket Mode -------------------------------------------------------------------------------

  /** Socket Mode connections accepted so far (reconnects included). */
  get socketConnections(): number {
    return this.#socketConnections;
  }

  /** Socket Mode connections open now. */
  get openSockets(): number {
    return [...this.#sockets].filter((s) => s.readyState === s.OPEN).length;
  }

  /** Every ack received, oldest first. */
  get acks(): readonly RecordedAck[] {
    return this.#acks;
  }

  ackFor(envelopeId: string): RecordedAck | undefined {
    return this.#acks.find((a) => a.envelopeId === envelopeId);
  }

  /** Sends an `events_api` envelope over the newest open connection; returns its `envelope_id`. */
  deliver(event: SlackEventPayload, options: DeliverOptions = {}): string {
    const retryAttempt = options.retryAttempt ?? 0;
    return this.#send({
      type: 'events_api',
      accepts_response_payload: false,
      retry_attempt: retryAttempt,
      retry_reason: retryAttempt > 0 ? (options.retryReason ?? 'timeout') : '',
      payload: this.build.eventCallback(event, options.eventId),
    });
  }

  /** Sends a `slash_commands` envelope; the ack's payload is the command's response. */
  deliverCommand(command: SlashCommandPayload): string {
    return this.#send({ type: 'slash_commands', accepts_response_payload: true, payload: command });
  }

  /** Ends every open Socket Mode connection. */
  dropConnections(mode: DropMode = 'terminate'): void {
    for (const socket of this.#sockets) {
      switch (mode) {
        case 'terminate':
          socket.terminate();
          break;
        case 'close':
          socket.close(1001, 'going away');
          break;
        case 'refresh':
          socket.send(
            JSON.stringify({
              type: 'disconnect',
              reason: 'refresh_requested',
              debug_info: { host: 'fake-slack' },
            }),
          );
          break;
        default: {
          const exhaustive: never = mode;
          throw new Error(`unknown drop mode ${String(exhaustive)}`);
        }
      }
    }
  }

  // ---- Events API (HTTP) -------------------------------------------------------------------------

  /** POSTs a signed `event_callback` around `event` to an app's events URL. */
  sendEvent(url: string, event: SlackEventPayload, options: SignedRequestOptions): Promise<SignedResponse> {
    const body = JSON.stringify(this.build.eventCallback(event, options.eventId));
    return postSigned(url, body, 'application/json', options);
  }

  /** POSTs a signed slash command (`application/x-www-form-urlencoded`) to an app's events URL. */
  sendCommand(
    url: string,
    command: SlashCommandPayload,
    options: SignedRequestOptions,
  ): Promise<SignedResponse> {
    const body = new URLSearchParams(Object.entries(command)).toString();
    return postSigned(url, body, 'application/x-www-form-urlencoded', options);
  }

  /** POSTs the signed `url_verification` Slack sends when an events URL is configured. */
  sendUrlVerification(
    url: string,
    challenge: string,
    options: SignedRequestOptions,
  ): Promise<SignedResponse> {
    const body = JSON.stringify({ token: VERIFICATION_TOKEN, challenge, type: 'url_verification' });
    return postSigned(url, body, 'application/json', options);
  }

  /** POSTs to slash commands' `response_url`s, oldest first. */
  get responses(): readonly RecordedResponse[] {
    return this.#responses;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.terminate();
    this.#sockets.clear();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await closeServer(this.#server);
  }

  // ---- internals ---------------------------------------------------------------------------------

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    const url = new URL(req.url ?? '/', `http://${this.#origin}`);
    const raw = await readBody(req);
    const body = parseBody(raw, req.headers['content-type']);

    if (url.pathname.startsWith('/api/')) {
      const method = url.pathname.slice('/api/'.length);
      const args: Record<string, unknown> = { ...Object.fromEntries(url.searchParams), ...body };
      const header = req.headers.authorization;
      const token = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : str(args.token);
      if ('token' in args) args.token = '[redacted]';
      const kind = tokenKind(token);
      const answer = this.#faults.take(method) ?? {
        status: 200,
        headers: {},
        body: this.#callApi(method, args, kind),
      };
      this.#calls.push({
        index: this.#calls.length,
        method,
        args,
        authorization: header === undefined ? undefined : 'Bearer [redacted]',
        tokenKind: kind,
        status: answer.status,
        response: answer.body,
        at,
      });
      sendSlackJson(res, answer.status, answer.body, answer.headers);
      return;
    }
    if (req.method === 'POST' && url.pathname.startsWith('/commands/response/')) {
      this.#responses.push({ path: url.pathname, body });
      sendSlackJson(res, 200, { ok: true });
      return;
    }
    sendSlackJson(res, 404, { ok: false, error: 'not_found' });
  }

  #callApi(method: string, args: WebApiArgs, kind: TokenKind): WebApiBody {
    return callWebApi(method, args, {
      workspace: this.#workspace,
      tokenKind: kind,
      openSocketUrl: () => {
        const ticket = randomBytes(16).toString('hex');
        this.#tickets.add(ticket);
        return `ws://${this.#origin}/link/?ticket=${ticket}&app_id=${this.identity.appId}`;
      },
    });
  }

  #script(method: string, fault: WebApiFault, times: number): this {
    this.#faults.add(webApiFaultScript(method, fault, times));
    return this;
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', `http://${this.#origin}`);
    const ticket = url.searchParams.get('ticket') ?? '';
    // A ticket from apps.connections.open is good for one connection, as on Slack.
    if (url.pathname !== '/link/' || !this.#tickets.delete(ticket)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#onSocket(ws));
  }

  #onSocket(ws: WebSocket): void {
    this.#socketConnections++;
    this.#sockets.add(ws);
    ws.on('close', () => this.#sockets.delete(ws));
    ws.on('error', () => this.#sockets.delete(ws));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const frame = parseJson(data.toString());
      if (!isRecord(frame) || typeof frame.envelope_id !== 'string') return;
      const payload = isRecord(frame.payload) ? frame.payload : undefined;
      this.#acks.push({ envelopeId: frame.envelope_id, payload });
    });
    if (this.#hello) {
      ws.send(
        JSON.stringify({
          type: 'hello',
          num_connections: this.#sockets.size,
          debug_info: { host: 'fake-slack', build_number: 1, approximate_connection_time: 18_060 },
          connection_info: { app_id: this.identity.appId },
        }),
      );
    }
  }

  #send(envelope: Readonly<Record<string, unknown>>): string {
    const socket = [...this.#sockets].reverse().find((s) => s.readyState === s.OPEN);
    if (!socket) throw new Error('FakeSlack: no open Socket Mode connection to deliver to');
    const envelopeId = `${randomBytes(4).toString('hex')}-${randomBytes(2).toString('hex')}-${randomBytes(6).toString('hex')}`;
    socket.send(JSON.stringify({ envelope_id: envelopeId, ...envelope }));
    return envelopeId;
  }
}

async function postSigned(
  url: string,
  body: string,
  contentType: string,
  options: SignedRequestOptions,
): Promise<SignedResponse> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const secret = options.forgeSignature ? `forged-${randomBytes(8).toString('hex')}` : options.signingSecret;
  const headers: Record<string, string> = {
    'content-type': contentType,
    'x-slack-request-timestamp': String(timestamp),
    'x-slack-signature': signSlackRequest(secret, timestamp, body),
    'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
  };
  if (options.retryNum !== undefined) {
    headers['x-slack-retry-num'] = String(options.retryNum);
    headers['x-slack-retry-reason'] = options.retryReason ?? 'http_timeout';
  }
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, text, json: parseJson(text) };
}

function parseBody(raw: string, contentType: string | undefined): Record<string, unknown> {
  if (raw === '') return {};
  if (contentType?.includes('application/json')) {
    const parsed = parseJson(raw);
    return isRecord(parsed) ? parsed : {};
  }
  return Object.fromEntries(new URLSearchParams(raw));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Slack answers JSON with a charset. */
function sendSlackJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  sendJson(res, status, body, headers, 'application/json; charset=utf-8');
}
