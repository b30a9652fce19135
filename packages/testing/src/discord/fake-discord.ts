/**
 * A local Discord that the real discord.js client talks to: the REST API under `/api/v10` and the
 * gateway WebSocket (plain JSON, no zlib), one bot, one shard, one client at a time. Tests inject
 * gateway dispatches (messages, slash commands), break the connection to exercise RESUME and
 * INVALID_SESSION, and read back what the client did over REST. Every HTTP request and every gateway
 * payload from the client is recorded, with the token redacted. `rateLimit` scripts HTTP 429s on REST
 * routes (`rate-limits.ts`), `serverError` 5xx answers (`server-errors.ts`).
 *
 *   const fake = await FakeDiscord.start();
 *   const client = new Client({ intents, rest: { api: fake.restApi } });
 *   await client.login(fake.token);
 *   const alice = fake.createUser({ username: 'alice' });
 *   fake.postMessage({ channel: fake.guild.channel('general'), author: alice, content: 'hi' });
 *   fake.editMessage(message, 'hello');            // MESSAGE_UPDATE; deleteMessage, bulkDelete: MESSAGE_DELETE(_BULK)
 *   fake.dropConnection();                        // the client resumes; missed dispatches are replayed
 *   fake.archiveThread(thread);                   // THREAD_UPDATE; a new session's GUILD_CREATE omits it
 *   expect(fake.posted.map((m) => m.content)).toEqual(['hello']);
 *   await fake.close();
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { closeServer, listenOnFreePort, readBody } from '../http.js';
import { ScriptedFaults } from '../scripted-faults.js';
import { FakeGuild } from './fake-guild.js';
import { decodeSegment, HttpError, parseJson, sendJson } from './http.js';
import {
  type RateLimitAnswer,
  type RateLimitedRequest,
  type RateLimitScript,
  rateLimitScript,
} from './rate-limits.js';
import { matchesRoute, routeParts } from './route-pattern.js';
import { type ServerErrorAnswer, type ServerErrorScript, serverErrorScript } from './server-errors.js';
import { SnowflakeGenerator } from './snowflake.js';
import {
  ApplicationCommandOptionType,
  apiError,
  archivedThreadPayload,
  ChannelType,
  commandInteractionPayload,
  dmChannelPayload,
  GatewayOp,
  type GatewayPayload,
  guildCreatePayload,
  InteractionCallbackType,
  MessageFlags,
  memberPayload,
  mentionedIds,
  messagePayload,
  textChannelPayload,
  threadPayload,
  userPayload,
  type WireChannel,
  type WireCommand,
  type WireCommandOption,
  type WireMessage,
  type WireUser,
} from './wire.js';

export interface FakeGuildInit {
  readonly name: string;
  /** Text channel names. */
  readonly channels?: readonly string[];
  /** Active public threads, each under one of the text channels. */
  readonly threads?: readonly { readonly name: string; readonly parent: string }[];
}

/** What someone posts: `postMessage`'s input. */
export interface MessageInput {
  readonly channel: WireChannel | string;
  readonly author: WireUser;
  readonly content: string;
  /** The author's guild nickname. */
  readonly nick?: string;
  /** By default the known users written as `<@id>` / `<@!id>` in `content`. */
  readonly mentions?: readonly WireUser[];
}

export interface FakeDiscordOptions {
  /** The bot token the client must present (`Authorization: Bot <token>`, IDENTIFY, RESUME). */
  readonly token?: string;
  readonly botUsername?: string;
  /** Sent in HELLO; discord.js heartbeats at this interval (the first beat after a random part of it). */
  readonly heartbeatIntervalMs?: number;
  /** Dispatch MESSAGE_CREATE for messages the bot posts over REST, as Discord does. */
  readonly echoOwnMessages?: boolean;
  /** The guilds the bot is in; the first one is `fake.guild`. */
  readonly guilds?: readonly FakeGuildInit[];
}

const DEFAULTS = {
  token: 'fake-discord-bot-token',
  botUsername: 'ebb',
  heartbeatIntervalMs: 41_250,
  echoOwnMessages: true,
  guilds: [
    {
      name: 'Ebb Test',
      channels: ['general', 'random'],
      threads: [{ name: 'deploy-plan', parent: 'general' }],
    },
  ],
} as const satisfies Required<FakeDiscordOptions>;

/** An HTTP request as the fake received it. */
export interface RecordedDiscordRequest {
  readonly index: number;
  readonly method: string;
  /** The route without `/api/v10`, e.g. `/channels/123/messages`. */
  readonly route: string;
  readonly query: Readonly<Record<string, string>>;
  /** Lower-cased names; `authorization` is `[redacted]`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed JSON body, or undefined. */
  readonly body: unknown;
  /** The status the fake answered with. */
  readonly status: number;
  /** When the fake received the request (`Date.now()`), to see how long a client waited before a retry. */
  readonly at: number;
}

/** A gateway payload the client sent; `d.token` is `[redacted]`. */
export interface RecordedGatewayPayload {
  readonly op: number;
  readonly d: unknown;
  /** Counts accepted WebSocket connections from 1. */
  readonly connection: number;
}

export interface FakeInteractionReply {
  readonly content: string;
  readonly ephemeral: boolean;
  /** `callback`: the initial reply; `edit`: the deferred response edited; `followup`: a further message. */
  readonly via: 'callback' | 'edit' | 'followup';
}

export interface FakeInteraction {
  readonly id: string;
  readonly token: string;
  readonly command: string;
  readonly channelId: string;
  readonly userId: string;
  /** The interaction callbacks in order (`type` 4 = reply, 5 = deferred). */
  readonly callbacks: readonly {
    readonly type: number;
    readonly data: Record<string, unknown> | undefined;
  }[];
  /** What the invoking user sees, in order. */
  readonly replies: readonly FakeInteractionReply[];
}

interface InteractionState {
  readonly id: string;
  readonly token: string;
  readonly command: string;
  readonly channelId: string;
  readonly userId: string;
  readonly callbacks: { type: number; data: Record<string, unknown> | undefined }[];
  readonly replies: FakeInteractionReply[];
  originalMessageId: string | undefined;
  ephemeral: boolean;
}

interface Connection {
  readonly ws: WebSocket;
  readonly number: number;
  session: Session | undefined;
}

interface Session {
  readonly id: string;
  seq: number;
  /** Every dispatch of the session, for replay on RESUME. */
  readonly log: GatewayPayload[];
  connection: Connection | undefined;
  /** Dispatches the client already saw that the next RESUME replays again (at-least-once delivery). */
  resendOnResume: number;
}

const MAX_MESSAGE_LENGTH = 2000;
const COMMAND_NAME = /^[-_\p{L}\p{N}]{1,32}$/u;

export class FakeDiscord {
  /** For `new Client({ rest: { api } })`: `http://127.0.0.1:PORT/api`. */
  readonly restApi: string;
  /** The gateway URL `GET /gateway/bot` returns. */
  readonly gatewayUrl: string;
  /** The `resume_gateway_url` READY carries; the client reconnects there to RESUME. */
  readonly resumeGatewayUrl: string;
  readonly token: string;
  readonly bot: WireUser;
  /** The application id (the bot user's id, as for any bot created since 2016). */
  readonly applicationId: string;

  readonly #server: Server;
  readonly #wss: WebSocketServer;
  readonly #options: Required<FakeDiscordOptions>;
  readonly #ids = new SnowflakeGenerator();
  readonly #guilds: FakeGuild[] = [];
  readonly #users = new Map<string, WireUser>();
  readonly #dms = new Map<string, WireChannel>();
  /** Channels the bot may no longer see: REST on them answers 403. */
  readonly #denied = new Set<string>();
  readonly #commands = new Map<string, WireCommand[]>();
  readonly #interactions = new Map<string, InteractionState>();
  readonly #requests: RecordedDiscordRequest[] = [];
  readonly #received: RecordedGatewayPayload[] = [];
  readonly #posted: WireMessage[] = [];
  readonly #errors: string[] = [];
  readonly #connectionPaths: string[] = [];
  /** Scripted 429s and 5xx answers, in one list: a request gets the oldest script that matches it. */
  readonly #faults = new ScriptedFaults<RateLimitedRequest, RateLimitAnswer | ServerErrorAnswer>(
    'FakeDiscord',
  );
  #session: Session | undefined;
  #connections = 0;

  private constructor(server: Server, options: Required<FakeDiscordOptions>) {
    this.#server = server;
    this.#options = options;
    const { port } = server.address() as AddressInfo;
    this.restApi = `http://127.0.0.1:${port}/api`;
    this.gatewayUrl = `ws://127.0.0.1:${port}/gateway`;
    this.resumeGatewayUrl = `ws://127.0.0.1:${port}/resume`;
    this.token = options.token;
    this.bot = this.#addUser({ username: options.botUsername, bot: true });
    this.applicationId = this.bot.id;
    this.#wss = new WebSocketServer({ noServer: true });
    for (const init of options.guilds) this.addGuild(init);
  }

  /** Listens on 127.0.0.1, on a free port. */
  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const merged = { ...DEFAULTS, ...options };
    const server = createServer();
    await listenOnFreePort(server);
    const fake = new FakeDiscord(server, merged);
    server.on('request', (req, res) => fake.#onRequest(req, res));
    server.on('upgrade', (req, socket, head) => fake.#onUpgrade(req, socket, head));
    return fake;
  }

  // ---- world ---------------------------------------------------------------------------------

  /** The first guild. */
  get guild(): FakeGuild {
    const first = this.#guilds[0];
    if (!first) throw new Error('FakeDiscord: there is no guild');
    return first;
  }

  get guilds(): readonly FakeGuild[] {
    return this.#guilds;
  }

  /** Adds a guild the bot is in; with a live session the client gets GUILD_CREATE for it. */
  addGuild(init: FakeGuildInit): FakeGuild {
    const guild = new FakeGuild(this.#ids.next(), init.name);
    this.#guilds.push(guild);
    for (const [position, name] of (init.channels ?? []).entries()) {
      guild.add(textChannelPayload({ id: this.#ids.next(), guildId: guild.id, name, position }));
    }
    for (const thread of init.threads ?? []) {
      const parent = guild.channel(thread.parent);
      guild.add(
        threadPayload({
          id: this.#ids.next(),
          guildId: guild.id,
          parentId: parent.id,
          name: thread.name,
          ownerId: this.bot.id,
        }),
      );
    }
    if (this.#session) this.dispatch('GUILD_CREATE', this.#guildCreate(guild));
    return guild;
  }

  /** Adds a text channel; with a live session the client gets CHANNEL_CREATE. */
  addChannel(guild: FakeGuild, name: string): WireChannel {
    const channel = textChannelPayload({
      id: this.#ids.next(),
      guildId: guild.id,
      name,
      position: guild.channels.length,
    });
    guild.add(channel);
    if (this.#session) this.dispatch('CHANNEL_CREATE', channel);
    return channel;
  }

  /**
   * Starts a thread under `parent` (public by default); with a live session the client gets
   * THREAD_CREATE. An `archived` thread is one from long ago: no dispatch, and no GUILD_CREATE carries
   * it, so a client knows of it only by asking (`GET /channels/{id}`).
   */
  addThread(
    guild: FakeGuild,
    input: { name: string; parent: WireChannel; owner?: WireUser; private?: boolean; archived?: boolean },
  ): WireChannel {
    const thread = threadPayload({
      id: this.#ids.next(),
      guildId: guild.id,
      parentId: input.parent.id,
      name: input.name,
      ownerId: (input.owner ?? this.bot).id,
      type: input.private ? ChannelType.PrivateThread : ChannelType.PublicThread,
      archived: input.archived ?? false,
    });
    guild.add(thread);
    if (this.#session && !input.archived) this.dispatch('THREAD_CREATE', { ...thread, newly_created: true });
    return thread;
  }

  /**
   * A thread goes quiet and Discord archives it: THREAD_UPDATE with the thread archived, while a
   * session is live. From then on no GUILD_CREATE carries it (a client that connects afterwards, a
   * restarted bot, has never heard of it) until a message posted in it unarchives it.
   */
  archiveThread(thread: WireChannel | string): WireChannel {
    return this.#setArchived(this.#channel(thread), true);
  }

  /**
   * The bot loses access to a channel (a moderator took its View Channel away): REST on it answers
   * 403 Missing Access, as Discord does.
   */
  denyAccess(channel: WireChannel | string): void {
    this.#denied.add(this.#channel(channel).id);
  }

  /** A user (a person by default, or another bot). */
  createUser(input: { username: string; globalName?: string; bot?: boolean }): WireUser {
    return this.#addUser(input);
  }

  /** The DM channel between the bot and `user`. */
  dm(user: WireUser): WireChannel {
    let channel = this.#dms.get(user.id);
    if (!channel) {
      channel = dmChannelPayload({ id: this.#ids.next(), recipient: user });
      this.#dms.set(user.id, channel);
    }
    return channel;
  }

  /** A fresh snowflake. */
  snowflake(): string {
    return this.#ids.next();
  }

  // ---- gateway dispatches --------------------------------------------------------------------

  /**
   * Sends a dispatch in the current session and returns its sequence number. While the client is
   * disconnected the dispatch waits in the session log and is replayed on RESUME.
   */
  dispatch(t: string, d: unknown): number {
    const session = this.#session;
    if (!session)
      throw new Error(`FakeDiscord: cannot dispatch ${t}: no gateway session (client not identified)`);
    session.seq += 1;
    const payload: GatewayPayload = { op: GatewayOp.Dispatch, t, s: session.seq, d };
    session.log.push(payload);
    if (session.connection) this.#send(session.connection, payload);
    return session.seq;
  }

  /**
   * Someone posts a message: MESSAGE_CREATE, after a THREAD_UPDATE when it unarchives a thread.
   * Mentions default to the known users written as `<@id>` / `<@!id>` in `content`; `nick` is the
   * author's guild nickname.
   */
  postMessage(input: MessageInput): WireMessage {
    // Posting in an archived thread unarchives it: THREAD_UPDATE first, as Discord sends it.
    this.#unarchive(this.#channel(input.channel));
    const message = this.messageFromBefore(input);
    this.dispatch('MESSAGE_CREATE', message);
    return message;
  }

  /**
   * A message posted before the client connected (before a restart): built as `postMessage` builds
   * it, never dispatched, so the client has not seen it or, for a DM, its channel.
   */
  messageFromBefore(input: MessageInput): WireMessage {
    return messagePayload({
      id: this.#ids.next(),
      channel: this.#channel(input.channel),
      author: input.author,
      content: input.content,
      member: memberPayload({ nick: input.nick ?? null }),
      mentions: input.mentions ?? this.#mentions(input.content),
    });
  }

  /**
   * A message is deleted (by its author, a moderator, or the bot): MESSAGE_DELETE, which carries only
   * the ids. Takes any message, including one the client never saw (`{ id, channel_id }`).
   */
  deleteMessage(message: Pick<WireMessage, 'id' | 'channel_id' | 'guild_id'>): void {
    this.dispatch('MESSAGE_DELETE', {
      id: message.id,
      channel_id: message.channel_id,
      ...(message.guild_id === undefined ? {} : { guild_id: message.guild_id }),
    });
  }

  /** A moderator deletes several messages of a guild channel at once: MESSAGE_DELETE_BULK. */
  bulkDelete(channel: WireChannel | string, messages: readonly Pick<WireMessage, 'id'>[]): void {
    const where = this.#channel(channel);
    if (where.guild_id === undefined)
      throw new Error('FakeDiscord: bulk deletion is for guild channels only');
    this.dispatch('MESSAGE_DELETE_BULK', {
      ids: messages.map((m) => m.id),
      channel_id: where.id,
      guild_id: where.guild_id,
    });
  }

  /**
   * The author edits a message: MESSAGE_UPDATE with the whole message as it is now (new content and
   * mentions, `edited_timestamp` set), as Discord sends it. Returns the edited message.
   */
  editMessage(message: WireMessage, content: string): WireMessage {
    const edited: WireMessage = {
      ...message,
      content,
      mentions: this.#mentions(content),
      edited_timestamp: new Date().toISOString(),
    };
    this.dispatch('MESSAGE_UPDATE', edited);
    return edited;
  }

  /**
   * Discord unfurls a link in a message: MESSAGE_UPDATE with the embeds added and the content and
   * `edited_timestamp` as they were.
   */
  unfurl(message: WireMessage, url = 'https://example.com/'): WireMessage {
    const unfurled: WireMessage = { ...message, embeds: [{ type: 'link', url, title: url }] };
    this.dispatch('MESSAGE_UPDATE', unfurled);
    return unfurled;
  }

  /**
   * Someone runs a slash command the bot registered (globally, or for the channel's guild):
   * INTERACTION_CREATE. Throws when no such command is registered, as Discord would not offer it.
   */
  invokeCommand(input: {
    name: string;
    channel: WireChannel | string;
    user: WireUser;
    options?: Readonly<Record<string, string | number | boolean>>;
    nick?: string;
  }): FakeInteraction {
    const channel = this.#channel(input.channel);
    const guildId = channel.guild_id;
    const command =
      (guildId === undefined ? undefined : this.#commands.get(guildId)?.find((c) => c.name === input.name)) ??
      this.#commands.get('global')?.find((c) => c.name === input.name);
    if (!command) throw new Error(`FakeDiscord: /${input.name} is not registered for channel ${channel.id}`);
    const options = Object.entries(input.options ?? {}).map(([name, value]) => ({
      name,
      type: command.options?.find((o) => o.name === name)?.type ?? optionType(value),
      value,
    }));
    const state: InteractionState = {
      id: this.#ids.next(),
      token: `aW50ZXJhY3Rpb24${randomBytes(24).toString('base64url')}`,
      command: input.name,
      channelId: channel.id,
      userId: input.user.id,
      callbacks: [],
      replies: [],
      originalMessageId: undefined,
      ephemeral: false,
    };
    this.#interactions.set(state.id, state);
    this.dispatch(
      'INTERACTION_CREATE',
      commandInteractionPayload({
        id: state.id,
        token: state.token,
        applicationId: this.applicationId,
        command,
        channel,
        user: input.user,
        member: memberPayload({ nick: input.nick ?? null }),
        options,
      }),
    );
    return state;
  }

  // ---- connection faults ---------------------------------------------------------------------

  /**
   * Closes the client's socket (code 4000 by default, which discord.js answers with RESUME). The
   * session stays valid: dispatches sent until the client resumes are replayed by sequence number,
   * plus the last `resendOnResume` ones it had already received (Discord may deliver twice).
   */
  dropConnection(options: { code?: number; resendOnResume?: number } = {}): void {
    const session = this.#session;
    const connection = session?.connection;
    if (!session || !connection) throw new Error('FakeDiscord: no connected session to drop');
    session.resendOnResume = options.resendOnResume ?? 0;
    session.connection = undefined;
    connection.session = undefined;
    connection.ws.close(options.code ?? 4000, 'FakeDiscord dropped the connection');
  }

  /**
   * Sends INVALID_SESSION. Not resumable (the default): the session is forgotten and the client must
   * IDENTIFY again (dispatching before it has throws). Resumable: the client sends RESUME.
   */
  invalidateSession(options: { resumable?: boolean } = {}): void {
    const session = this.#session;
    const connection = session?.connection;
    if (!session || !connection) throw new Error('FakeDiscord: no connected session to invalidate');
    const resumable = options.resumable ?? false;
    if (!resumable) {
      this.#session = undefined;
      connection.session = undefined;
    }
    this.#send(connection, { op: GatewayOp.InvalidSession, d: resumable });
  }

  // ---- rate limits and server errors ---------------------------------------------------------

  /**
   * Answers the next `times` requests matching `method` and `route` (`channels/:id/messages`) with
   * HTTP 429 and Discord's rate-limit headers and body, before any other check. The refused
   * requests are recorded with status 429.
   *
   *   fake.rateLimit({ method: 'POST', route: 'channels/:id/messages', times: 2, retryAfterSeconds: 1 });
   */
  rateLimit(script: RateLimitScript): this {
    this.#faults.add(rateLimitScript(script));
    return this;
  }

  /**
   * Answers the next `times` requests matching `method` and `route` with a 5xx (500 by default),
   * before any other check. discord.js sends a request that met a 5xx again at once, `retries` times
   * (3 by default), before it throws: one failed call takes `retries + 1` of them.
   *
   *   fake.serverError({ method: 'GET', route: `channels/${thread.id}`, times: 8, status: 502 });
   */
  serverError(script: ServerErrorScript): this {
    this.#faults.add(serverErrorScript(script));
    return this;
  }

  // ---- records -------------------------------------------------------------------------------

  get requests(): readonly RecordedDiscordRequest[] {
    return this.#requests;
  }

  /** Gateway payloads from the client (heartbeats, IDENTIFY, RESUME, ...), oldest first. */
  get gatewayReceived(): readonly RecordedGatewayPayload[] {
    return this.#received;
  }

  get identifyCount(): number {
    return this.#received.filter((p) => p.op === GatewayOp.Identify).length;
  }

  get resumeCount(): number {
    return this.#received.filter((p) => p.op === GatewayOp.Resume).length;
  }

  /** The path of each WebSocket connection the client opened, oldest first (`/gateway`, `/resume`). */
  get connectionPaths(): readonly string[] {
    return this.#connectionPaths;
  }

  /** A socket is attached to a live session. */
  get connected(): boolean {
    return this.#session?.connection !== undefined;
  }

  get sessionId(): string | undefined {
    return this.#session?.id;
  }

  /** Messages the bot posted over REST, oldest first. */
  get posted(): readonly WireMessage[] {
    return this.#posted;
  }

  /** Channel ids of `POST /channels/:id/typing` answered 204, oldest first. */
  get typing(): readonly string[] {
    return this.#requests
      .filter((r) => r.method === 'POST' && r.status === 204 && /^\/channels\/\d+\/typing$/.test(r.route))
      .map((r) => r.route.split('/')[2] ?? '');
  }

  /** The application commands registered globally (no argument) or for one guild. */
  commands(guildId?: string): readonly WireCommand[] {
    return this.#commands.get(guildId ?? 'global') ?? [];
  }

  interaction(id: string): FakeInteraction {
    const state = this.#interactions.get(id);
    if (!state) throw new Error(`FakeDiscord: no interaction ${id}`);
    return state;
  }

  /** Protocol violations the fake saw (bad opcodes, compression requested, bad tokens). */
  get errors(): readonly string[] {
    return this.#errors;
  }

  async close(): Promise<void> {
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await closeServer(this.#server);
  }

  // ---- gateway -------------------------------------------------------------------------------

  #onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      this.#connections += 1;
      const connection: Connection = { ws, number: this.#connections, session: undefined };
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      this.#connectionPaths.push(url.pathname);
      ws.on('message', (data, isBinary) => this.#onGatewayMessage(connection, data, isBinary));
      ws.on('close', () => {
        const session = connection.session;
        if (session?.connection === connection) session.connection = undefined;
      });
      ws.on('error', () => {});
      const encoding = url.searchParams.get('encoding') ?? 'json';
      if (encoding !== 'json' || url.searchParams.has('compress')) {
        this.#errors.push(
          `gateway connection asked for encoding=${encoding} compress=${url.searchParams.get('compress')}; ` +
            'FakeDiscord speaks plain JSON only (is zlib-sync installed?)',
        );
        ws.close(1003, 'FakeDiscord speaks plain JSON only');
        return;
      }
      this.#send(connection, {
        op: GatewayOp.Hello,
        d: { heartbeat_interval: this.#options.heartbeatIntervalMs },
      });
    });
  }

  #onGatewayMessage(connection: Connection, data: RawData, isBinary: boolean): void {
    let payload: { op?: unknown; d?: unknown };
    try {
      if (isBinary) throw new Error('binary frame');
      payload = JSON.parse(rawText(data)) as { op?: unknown; d?: unknown };
    } catch {
      this.#errors.push('the client sent a frame that is not JSON text');
      connection.ws.close(4002, 'Error while decoding payload.');
      return;
    }
    const { op, d } = payload;
    this.#received.push({ op: Number(op), d: redactToken(d), connection: connection.number });
    switch (op) {
      case GatewayOp.Heartbeat:
        this.#send(connection, { op: GatewayOp.HeartbeatAck, d: null });
        return;
      case GatewayOp.Identify:
        this.#identify(connection, d);
        return;
      case GatewayOp.Resume:
        this.#resume(connection, d);
        return;
      case GatewayOp.PresenceUpdate:
      case GatewayOp.RequestGuildMembers:
        return;
      default:
        this.#errors.push(`the client sent unknown opcode ${String(op)}`);
        connection.ws.close(4001, 'Unknown opcode.');
    }
  }

  #identify(connection: Connection, d: unknown): void {
    if (connection.session) {
      connection.ws.close(4005, 'Already authenticated.');
      return;
    }
    if (!isRecord(d) || d.token !== this.token) {
      this.#errors.push('IDENTIFY with a wrong token');
      connection.ws.close(4004, 'Authentication failed.');
      return;
    }
    const session: Session = {
      id: randomBytes(16).toString('hex'),
      seq: 0,
      log: [],
      connection,
      resendOnResume: 0,
    };
    const previous = this.#session?.connection;
    if (previous && previous !== connection) previous.ws.close(4000, 'Replaced by a new session');
    this.#session = session;
    connection.session = session;
    this.dispatch('READY', {
      v: 10,
      user: { ...this.bot, verified: true, mfa_enabled: false, flags: 0 },
      guilds: this.#guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: session.id,
      session_type: 'normal',
      resume_gateway_url: this.resumeGatewayUrl,
      shard: [0, 1],
      application: { id: this.applicationId, flags: 0 },
    });
    for (const guild of this.#guilds) this.dispatch('GUILD_CREATE', this.#guildCreate(guild));
  }

  #resume(connection: Connection, d: unknown): void {
    const session = this.#session;
    if (!isRecord(d) || d.token !== this.token) {
      this.#errors.push('RESUME with a wrong token');
      connection.ws.close(4004, 'Authentication failed.');
      return;
    }
    if (!session || d.session_id !== session.id || typeof d.seq !== 'number' || d.seq > session.seq) {
      this.#send(connection, { op: GatewayOp.InvalidSession, d: false });
      return;
    }
    const previous = session.connection;
    if (previous && previous !== connection) {
      previous.session = undefined;
      previous.ws.close(4000, 'Resumed elsewhere');
    }
    session.connection = connection;
    connection.session = session;
    // READY is never replayed: a resumed session continues after it.
    const from = Math.max(d.seq - session.resendOnResume, 1);
    session.resendOnResume = 0;
    for (const payload of session.log) {
      if ((payload.s ?? 0) > from) this.#send(connection, payload);
    }
    this.dispatch('RESUMED', null);
  }

  #send(connection: Connection, payload: GatewayPayload): void {
    if (connection.ws.readyState === connection.ws.OPEN) connection.ws.send(JSON.stringify(payload));
  }

  #guildCreate(guild: FakeGuild): Record<string, unknown> {
    return guildCreatePayload({
      id: guild.id,
      name: guild.name,
      ownerId: this.bot.id,
      channels: guild.channels,
      threads: guild.threads,
      members: [memberPayload({ user: this.bot })],
    });
  }

  // ---- REST ----------------------------------------------------------------------------------

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.#handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, apiError(0, `FakeDiscord failure: ${String(err)}`));
      else res.destroy();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = Date.now();
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      headers[name] =
        name === 'authorization' ? '[redacted]' : Array.isArray(value) ? value.join(', ') : value;
    }
    const route = url.pathname
      .replace(/^\/api(\/v\d+)?/, '')
      .split('/')
      .map(decodeSegment)
      .join('/');
    let body: unknown;
    let status: number;
    let answer: unknown;
    let answerHeaders: Readonly<Record<string, string>> = {};
    try {
      if (!/^\/api\/v10\//.test(url.pathname)) throw new HttpError(404, apiError(0, '404: Not Found'));
      body = parseJson(raw, req.headers['content-type']);
      const limited = this.#faults.take({ method, parts: routeParts(route), now: at });
      const result = limited ?? this.#route(method, route, body, url.searchParams, req.headers.authorization);
      status = result.status;
      answer = result.body;
      answerHeaders = limited?.headers ?? {};
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      status = err.status;
      answer = err.body;
    }
    this.#requests.push({
      index: this.#requests.length,
      method,
      route,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
      status,
      at,
    });
    if (answer === undefined) {
      res.writeHead(status, answerHeaders).end();
    } else {
      sendJson(res, status, answer, answerHeaders);
    }
  }

  #route(
    method: string,
    route: string,
    body: unknown,
    query: URLSearchParams,
    authorization: string | undefined,
  ): { status: number; body?: unknown } {
    const parts = routeParts(route);
    const is = (m: string, pattern: string): boolean => m === method && matchesRoute(pattern, parts);
    const bot = () => {
      if (authorization !== `Bot ${this.token}`) throw new HttpError(401, apiError(0, '401: Unauthorized'));
    };
    const [, a = '', b = '', c = ''] = parts;

    if (is('GET', 'gateway')) return ok({ url: this.gatewayUrl });
    if (is('GET', 'gateway/bot')) {
      bot();
      return ok({
        url: this.gatewayUrl,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 86_400_000, max_concurrency: 1 },
      });
    }
    if (is('GET', 'users/@me')) {
      bot();
      return ok(this.bot);
    }
    if (is('POST', 'users/@me/channels')) {
      bot();
      const recipient = isRecord(body) ? this.#users.get(String(body.recipient_id)) : undefined;
      if (!recipient) throw new HttpError(400, apiError(50033, 'Invalid Recipient(s)'));
      return ok(this.dm(recipient));
    }
    if (is('GET', 'applications/@me')) {
      bot();
      return ok({
        id: this.applicationId,
        name: this.bot.username,
        bot: this.bot,
        flags: 0,
        description: '',
      });
    }
    if (is('GET', 'channels/:id')) {
      bot();
      return ok(this.#channel(a, true));
    }
    if (is('POST', 'channels/:id/messages')) {
      bot();
      return ok(this.#createMessage(this.#channel(a, true), body));
    }
    if (is('POST', 'channels/:id/typing')) {
      bot();
      this.#channel(a, true);
      return { status: 204 };
    }
    if (is('GET', 'applications/:app/commands') || is('PUT', 'applications/:app/commands')) {
      bot();
      this.#application(a);
      return ok(method === 'PUT' ? this.#putCommands('global', undefined, body) : this.commands());
    }
    if (
      is('GET', 'applications/:app/guilds/:guild/commands') ||
      is('PUT', 'applications/:app/guilds/:guild/commands')
    ) {
      bot();
      this.#application(a);
      if (!this.#guilds.some((g) => g.id === c)) throw new HttpError(404, apiError(10004, 'Unknown Guild'));
      return ok(method === 'PUT' ? this.#putCommands(c, c, body) : this.commands(c));
    }
    if (is('POST', 'interactions/:id/:token/callback')) {
      return this.#interactionCallback(
        this.#interactionFor(a, b),
        body,
        query.get('with_response') === 'true',
      );
    }
    if (
      is('PATCH', 'webhooks/:app/:token/messages/@original') ||
      is('GET', 'webhooks/:app/:token/messages/@original')
    ) {
      this.#application(a);
      const state = this.#interactionByToken(b);
      if (!state.originalMessageId) throw new HttpError(404, apiError(10008, 'Unknown Message'));
      const content = method === 'PATCH' && isRecord(body) ? String(body.content ?? '') : '';
      if (method === 'PATCH') state.replies.push({ content, ephemeral: state.ephemeral, via: 'edit' });
      return ok(this.#interactionMessage(state, state.originalMessageId, content));
    }
    if (is('POST', 'webhooks/:app/:token')) {
      this.#application(a);
      const state = this.#interactionByToken(b);
      if (state.callbacks.length === 0)
        throw new HttpError(400, apiError(40060, 'Unknown interaction response'));
      const flags = isRecord(body) ? Number(body.flags ?? 0) : 0;
      const content = isRecord(body) ? String(body.content ?? '') : '';
      state.replies.push({ content, ephemeral: (flags & MessageFlags.Ephemeral) !== 0, via: 'followup' });
      return ok(this.#interactionMessage(state, this.#ids.next(), content));
    }
    throw new HttpError(404, apiError(0, '404: Not Found'));
  }

  #createMessage(channel: WireChannel, body: unknown): WireMessage {
    const content = isRecord(body) && typeof body.content === 'string' ? body.content : '';
    if (content.trim() === '') throw new HttpError(400, apiError(50006, 'Cannot send an empty message'));
    if (content.length > MAX_MESSAGE_LENGTH) {
      throw new HttpError(
        400,
        apiError(50035, 'Invalid Form Body', {
          content: {
            _errors: [
              { code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${MAX_MESSAGE_LENGTH} or fewer in length.` },
            ],
          },
        }),
      );
    }
    // Posting in an archived thread unarchives it, the bot's post too.
    this.#unarchive(channel);
    const message = messagePayload({
      id: this.#ids.next(),
      channel,
      author: this.bot,
      content,
      member: memberPayload({}),
      mentions: this.#mentions(content),
    });
    this.#posted.push(message);
    if (this.#options.echoOwnMessages && this.#session) this.dispatch('MESSAGE_CREATE', message);
    // A REST answer carries no guild_id, member or channel_type (gateway-only fields).
    const { guild_id: _g, member: _m, channel_type: _t, ...rest } = message;
    return rest as WireMessage;
  }

  #putCommands(scope: string, guildId: string | undefined, body: unknown): WireCommand[] {
    if (!Array.isArray(body)) throw new HttpError(400, apiError(50035, 'Invalid Form Body'));
    const previous = this.#commands.get(scope) ?? [];
    const commands = body.map((raw: unknown, index): WireCommand => {
      if (!isRecord(raw) || typeof raw.name !== 'string' || !COMMAND_NAME.test(raw.name)) {
        throw new HttpError(
          400,
          apiError(50035, 'Invalid Form Body', { [index]: { name: { _errors: [] } } }),
        );
      }
      const type = typeof raw.type === 'number' ? raw.type : 1;
      if (type === 1 && (typeof raw.description !== 'string' || raw.description.length > 100)) {
        throw new HttpError(
          400,
          apiError(50035, 'Invalid Form Body', { [index]: { description: { _errors: [] } } }),
        );
      }
      return {
        ...raw,
        id: previous.find((p) => p.name === raw.name)?.id ?? this.#ids.next(),
        application_id: this.applicationId,
        ...(guildId === undefined ? {} : { guild_id: guildId }),
        name: raw.name,
        description: typeof raw.description === 'string' ? raw.description : '',
        type,
        ...(Array.isArray(raw.options) ? { options: raw.options as WireCommandOption[] } : {}),
        version: this.#ids.next(),
      };
    });
    this.#commands.set(scope, commands);
    return commands;
  }

  #interactionCallback(
    state: InteractionState,
    body: unknown,
    withResponse: boolean,
  ): { status: number; body?: unknown } {
    if (state.callbacks.length > 0) {
      throw new HttpError(400, apiError(40060, 'Interaction has already been acknowledged.'));
    }
    const type = isRecord(body) ? Number(body.type) : Number.NaN;
    const data = isRecord(body) && isRecord(body.data) ? body.data : undefined;
    if (
      type !== InteractionCallbackType.ChannelMessageWithSource &&
      type !== InteractionCallbackType.DeferredChannelMessageWithSource
    ) {
      throw new HttpError(
        400,
        apiError(50035, `FakeDiscord does not support interaction callback type ${type}`),
      );
    }
    const flags = Number(data?.flags ?? 0);
    state.ephemeral = (flags & MessageFlags.Ephemeral) !== 0;
    state.callbacks.push({ type, data });
    state.originalMessageId = this.#ids.next();
    const content = String(data?.content ?? '');
    if (type === InteractionCallbackType.ChannelMessageWithSource) {
      state.replies.push({ content, ephemeral: state.ephemeral, via: 'callback' });
    }
    if (!withResponse) return { status: 204 };
    return ok({
      interaction: {
        id: state.id,
        type: 2,
        activity_instance_id: null,
        response_message_id: state.originalMessageId,
        response_message_loading: type === InteractionCallbackType.DeferredChannelMessageWithSource,
        response_message_ephemeral: state.ephemeral,
      },
      resource: { type, message: this.#interactionMessage(state, state.originalMessageId, content) },
    });
  }

  #interactionMessage(state: InteractionState, id: string, content: string): WireMessage {
    const {
      guild_id: _g,
      member: _m,
      channel_type: _t,
      ...rest
    } = messagePayload({
      id,
      channel: this.#channel(state.channelId),
      author: this.bot,
      content,
    });
    return { ...rest, flags: state.ephemeral ? MessageFlags.Ephemeral : 0, type: 20 } as WireMessage;
  }

  #interactionFor(id: string, token: string): InteractionState {
    const state = this.#interactions.get(id);
    if (!state) throw new HttpError(404, apiError(10062, 'Unknown interaction'));
    if (state.token !== token) throw new HttpError(401, apiError(50027, 'Invalid Webhook Token'));
    return state;
  }

  #interactionByToken(token: string): InteractionState {
    for (const state of this.#interactions.values()) if (state.token === token) return state;
    throw new HttpError(404, apiError(10015, 'Unknown Webhook'));
  }

  #application(id: string): void {
    if (id !== this.applicationId) throw new HttpError(404, apiError(10002, 'Unknown Application'));
  }

  /** The channel as it is now (a thread archived since `ref` was taken is archived). */
  #channel(ref: WireChannel | string, http = false): WireChannel {
    const id = typeof ref === 'string' ? ref : ref.id;
    if (http && this.#denied.has(id)) throw new HttpError(403, apiError(50001, 'Missing Access'));
    for (const guild of this.#guilds) {
      const found = guild.byId(id);
      if (found) return found;
    }
    for (const dm of this.#dms.values()) if (dm.id === id) return dm;
    if (http) throw new HttpError(404, apiError(10003, 'Unknown Channel'));
    throw new Error(`FakeDiscord: unknown channel ${id}`);
  }

  #unarchive(channel: WireChannel): void {
    if (channel.thread_metadata?.archived) this.#setArchived(channel, false);
  }

  #setArchived(thread: WireChannel, archived: boolean): WireChannel {
    const guild = this.#guilds.find((g) => g.id === thread.guild_id);
    if (!guild || !thread.thread_metadata) throw new Error(`FakeDiscord: ${thread.id} is not a thread`);
    const updated = archivedThreadPayload(thread, archived);
    guild.replace(updated);
    if (this.#session) this.dispatch('THREAD_UPDATE', updated);
    return updated;
  }

  #mentions(content: string): WireUser[] {
    return mentionedIds(content).flatMap((id) => {
      const user = this.#users.get(id);
      return user ? [user] : [];
    });
  }

  #addUser(input: { username: string; globalName?: string; bot?: boolean }): WireUser {
    const user = userPayload({ id: this.#ids.next(), ...input });
    this.#users.set(user.id, user);
    return user;
  }
}

function ok(body: unknown): { status: number; body: unknown } {
  return { status: 200, body };
}

function optionType(value: string | number | boolean): number {
  if (typeof value === 'boolean') return ApplicationCommandOptionType.Boolean;
  if (typeof value === 'number') return ApplicationCommandOptionType.Integer;
  return ApplicationCommandOptionType.String;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function redactToken(d: unknown): unknown {
  return isRecord(d) && 'token' in d ? { ...d, token: '[redacted]' } : d;
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data as ArrayBuffer).toString('utf8');
}
