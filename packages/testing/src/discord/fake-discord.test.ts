/**
 * FakeDiscord's wire protocol, driven by a bare WebSocket and fetch (the discord.js client is
 * exercised in packages/discord).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { FakeDiscord } from './fake-discord.js';
import { SnowflakeGenerator, snowflakeAt, snowflakeTimestamp } from './snowflake.js';
import { GatewayOp, type GatewayPayload } from './wire.js';

/** A bare gateway client that records every payload it receives. */
class RawGateway {
  readonly received: GatewayPayload[] = [];
  readonly ws: WebSocket;
  closeCode: number | undefined;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data) => this.received.push(JSON.parse(String(data)) as GatewayPayload));
    ws.on('close', (code) => {
      this.closeCode = code;
    });
  }

  static async connect(url: string, query: string): Promise<RawGateway> {
    const ws = new WebSocket(`${url}?${query}`);
    const gateway = new RawGateway(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return gateway;
  }

  send(op: number, d: unknown): void {
    this.ws.send(JSON.stringify({ op, d }));
  }

  dispatches(): { t: string | null | undefined; s: number | null | undefined; d: unknown }[] {
    return this.received.filter((p) => p.op === GatewayOp.Dispatch).map(({ t, s, d }) => ({ t, s, d }));
  }

  async identified(fake: FakeDiscord): Promise<void> {
    this.send(GatewayOp.Identify, { token: fake.token, intents: 0, properties: {} });
    await vi.waitFor(() => expect(this.dispatches().map((p) => p.t)).toContain('GUILD_CREATE'));
  }
}

let fake: FakeDiscord;
const sockets: RawGateway[] = [];

beforeEach(async () => {
  fake = await FakeDiscord.start({ heartbeatIntervalMs: 1_000 });
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.ws.terminate();
  await fake.close();
});

async function connect(url = fake.gatewayUrl, query = 'v=10&encoding=json'): Promise<RawGateway> {
  const socket = await RawGateway.connect(url, query);
  sockets.push(socket);
  return socket;
}

describe('FakeDiscord REST', () => {
  it('serves GET /gateway/bot to the bot token only, and records the call redacted', async () => {
    const denied = await fetch(`${fake.restApi}/v10/gateway/bot`, { headers: { authorization: 'Bot nope' } });
    const allowed = await fetch(`${fake.restApi}/v10/gateway/bot`, {
      headers: { authorization: `Bot ${fake.token}` },
    });

    expect(denied.status).toBe(401);
    expect(await allowed.json()).toEqual({
      url: fake.gatewayUrl,
      shards: 1,
      session_start_limit: expect.objectContaining({ max_concurrency: 1 }),
    });
    expect(fake.requests.map((r) => [r.method, r.route, r.status, r.headers.authorization])).toEqual([
      ['GET', '/gateway/bot', 401, '[redacted]'],
      ['GET', '/gateway/bot', 200, '[redacted]'],
    ]);
  });

  it('posts messages with snowflake ids and rejects empty or over-long content as Discord does', async () => {
    const channel = fake.guild.channel('general');
    const post = (content: string) =>
      fetch(`${fake.restApi}/v10/channels/${channel.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bot ${fake.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ content }),
      });

    const ok = await post('hello');
    const empty = await post(' ');
    const long = await post('x'.repeat(2001));

    const message = (await ok.json()) as { id: string; content: string; author: { id: string } };
    expect(message).toMatchObject({ content: 'hello', author: { id: fake.bot.id } });
    expect(Math.abs(snowflakeTimestamp(message.id) - Date.now())).toBeLessThan(60_000);
    expect([empty.status, ((await empty.json()) as { code: number }).code]).toEqual([400, 50006]);
    expect([long.status, ((await long.json()) as { code: number }).code]).toEqual([400, 50035]);
    expect(fake.posted.map((m) => m.content)).toEqual(['hello']);
  });
  it('serves GET /channels/{id} for threads active or archived, public or private; 404 and 403 as Discord', async () => {
    const general = fake.guild.channel('general');
    const active = fake.guild.channel('deploy-plan');
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const secret = fake.addThread(fake.guild, { name: 'secret', parent: general, private: true });
    const hidden = fake.addThread(fake.guild, { name: 'hidden', parent: general });
    fake.denyAccess(hidden);
    const get = async (id: string) => {
      const response = await fetch(`${fake.restApi}/v10/channels/${id}`, {
        headers: { authorization: `Bot ${fake.token}` },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    const thread = (channel: typeof active, type: number, isArchived: boolean) => ({
      status: 200,
      body: expect.objectContaining({
        id: channel.id,
        type,
        guild_id: fake.guild.id,
        parent_id: general.id,
        thread_metadata: expect.objectContaining({ archived: isArchived }),
      }),
    });
    expect(await get(active.id)).toEqual(thread(active, 11, false));
    expect(await get(archived.id)).toEqual(thread(archived, 11, true));
    expect(await get(secret.id)).toEqual(thread(secret, 12, false));
    expect(await get(hidden.id)).toEqual({ status: 403, body: { code: 50001, message: 'Missing Access' } });
    expect(await get(fake.snowflake())).toEqual({
      status: 404,
      body: { code: 10003, message: 'Unknown Channel' },
    });
  });
});

describe('FakeDiscord rate limits', () => {
  /** A REST call with the bot token; returns the status, the rate-limit headers and the JSON body. */
  async function rest(method: string, route: string, body?: unknown) {
    const response = await fetch(`${fake.restApi}/v10${route}`, {
      method,
      headers: { authorization: `Bot ${fake.token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const headers = Object.fromEntries(
      [...response.headers].filter(([name]) => name === 'retry-after' || name.startsWith('x-ratelimit-')),
    );
    const text = await response.text();
    return {
      status: response.status,
      headers,
      body: text === '' ? undefined : (JSON.parse(text) as unknown),
    };
  }

  it("answers scripted 429s with Discord's headers and body, then serves the route", async () => {
    const general = fake.guild.channel('general');
    const messages = `/channels/${general.id}/messages`;
    fake.rateLimit({ method: 'POST', route: 'channels/:id/messages', times: 2, retryAfterSeconds: 1.5 });

    const before = Date.now();
    const first = await rest('POST', messages, { content: 'one' });
    const read = await rest('GET', `/channels/${general.id}`);
    const second = await rest('POST', messages, { content: 'two' });
    const third = await rest('POST', messages, { content: 'three' });

    expect(first).toEqual({
      status: 429,
      headers: {
        'retry-after': '2',
        'x-ratelimit-limit': '5',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': expect.stringMatching(/^\d+\.\d{3}$/),
        'x-ratelimit-reset-after': '1.500',
        'x-ratelimit-bucket': expect.stringMatching(/^[0-9a-f]{32}$/),
        'x-ratelimit-scope': 'user',
      },
      body: { message: 'You are being rate limited.', retry_after: 1.5, global: false },
    });
    const reset = Number(first.headers['x-ratelimit-reset']) * 1000;
    expect(reset).toBeGreaterThanOrEqual(before + 1_500 - 1);
    expect(reset).toBeLessThan(Date.now() + 1_500 + 1);
    // The same route keeps its bucket; another method on the channel is not limited.
    expect(second).toEqual({
      ...first,
      headers: { ...first.headers, 'x-ratelimit-reset': second.headers['x-ratelimit-reset'] },
    });
    expect(read.status).toBe(200);
    expect(third).toMatchObject({ status: 200, headers: {}, body: { content: 'three' } });
    expect(fake.posted.map((m) => m.content)).toEqual(['three']);
    expect(fake.requests.map((r) => [r.method, r.status])).toEqual([
      ['POST', 429],
      ['GET', 200],
      ['POST', 429],
      ['POST', 200],
    ]);
    const times = fake.requests.map((r) => r.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBeGreaterThanOrEqual(before);
  });

  it('limits only the channel a concrete route names', async () => {
    const general = fake.guild.channel('general');
    const random = fake.guild.channel('random');
    fake.rateLimit({
      route: `/channels/${general.id}/typing`,
      retryAfterSeconds: 0.25,
      bucket: 'typing-bucket',
    });

    const other = await rest('POST', `/channels/${random.id}/typing`);
    const limited = await rest('POST', `/channels/${general.id}/typing`);
    const after = await rest('POST', `/channels/${general.id}/typing`);

    expect(other.status).toBe(204);
    expect(limited).toMatchObject({
      status: 429,
      headers: {
        'retry-after': '1',
        'x-ratelimit-reset-after': '0.250',
        'x-ratelimit-bucket': 'typing-bucket',
      },
      body: { retry_after: 0.25, global: false },
    });
    expect(after.status).toBe(204);
    // The refused request showed no typing indicator.
    expect(fake.typing).toEqual([random.id, general.id]);
  });

  it('answers a global limit with X-RateLimit-Global and no bucket headers', async () => {
    fake.rateLimit({ route: 'users/@me', scope: 'global', retryAfterSeconds: 3 });

    const limited = await rest('GET', '/users/@me');

    expect(limited).toEqual({
      status: 429,
      headers: { 'retry-after': '3', 'x-ratelimit-global': 'true', 'x-ratelimit-scope': 'global' },
      body: { message: 'You are being rate limited.', retry_after: 3, global: true },
    });
    expect((await rest('GET', '/users/@me')).status).toBe(200);
  });

  it('refuses scripts Discord could not send', () => {
    expect(() => fake.rateLimit({ route: 'users/@me', times: 0 })).toThrow(/times >= 1/);
    expect(() => fake.rateLimit({ route: 'users/@me', retryAfterSeconds: -1 })).toThrow(/>= 0/);
  });
});

describe('FakeDiscord gateway', () => {
  it('says HELLO, answers IDENTIFY with READY and GUILD_CREATE, and ACKs heartbeats', async () => {
    const gateway = await connect();
    await vi.waitFor(() => expect(gateway.received[0]).toEqual({ op: 10, d: { heartbeat_interval: 1_000 } }));

    await gateway.identified(fake);
    gateway.send(GatewayOp.Heartbeat, 2);

    await vi.waitFor(() => expect(gateway.received.map((p) => p.op)).toContain(GatewayOp.HeartbeatAck));
    const [ready, guild] = gateway.dispatches();
    expect(ready).toMatchObject({
      t: 'READY',
      s: 1,
      d: {
        session_id: fake.sessionId,
        resume_gateway_url: fake.resumeGatewayUrl,
        user: { id: fake.bot.id, bot: true },
        guilds: [{ id: fake.guild.id, unavailable: true }],
        application: { id: fake.applicationId },
      },
    });
    expect(guild).toMatchObject({
      t: 'GUILD_CREATE',
      s: 2,
      d: {
        id: fake.guild.id,
        channels: [
          { name: 'general', type: 0 },
          { name: 'random', type: 0 },
        ],
        threads: [{ name: 'deploy-plan', type: 11, parent_id: fake.guild.channel('general').id }],
      },
    });
    expect(fake.gatewayReceived[0]).toMatchObject({ op: GatewayOp.Identify, d: { token: '[redacted]' } });
  });

  it('replays the dispatches after the RESUME sequence, plus any it was told to resend, then RESUMED', async () => {
    const alice = fake.createUser({ username: 'alice' });
    const general = fake.guild.channel('general');
    const first = await connect();
    await first.identified(fake);
    const seen = fake.postMessage({ channel: general, author: alice, content: 'seen' });
    await vi.waitFor(() => expect(first.dispatches()).toHaveLength(3));

    fake.dropConnection({ resendOnResume: 1 });
    await vi.waitFor(() => expect(first.closeCode).toBe(4000));
    const missed = fake.postMessage({ channel: general, author: alice, content: 'missed' });
    const second = await connect(fake.resumeGatewayUrl);
    second.send(GatewayOp.Resume, { token: fake.token, session_id: fake.sessionId, seq: 3 });

    await vi.waitFor(() => expect(second.dispatches().map((p) => p.t)).toContain('RESUMED'));
    expect(second.dispatches().map((p) => [p.t, p.s, (p.d as { id?: string } | null)?.id])).toEqual([
      ['MESSAGE_CREATE', 3, seen.id],
      ['MESSAGE_CREATE', 4, missed.id],
      ['RESUMED', 5, undefined],
    ]);
    expect(fake.connected).toBe(true);
  });

  it('dispatches deletions, bulk deletions, edits and unfurls in the shapes Discord sends', async () => {
    const alice = fake.createUser({ username: 'alice' });
    const general = fake.guild.channel('general');
    const gateway = await connect();
    await gateway.identified(fake);
    const first = fake.postMessage({ channel: general, author: alice, content: 'one' });
    const second = fake.postMessage({ channel: general, author: alice, content: 'two' });
    const before = fake.messageFromBefore({ channel: fake.dm(alice), author: alice, content: 'old' });

    const edited = fake.editMessage(first, `<@${fake.bot.id}> one!`);
    fake.unfurl(edited);
    fake.deleteMessage(before);
    fake.bulkDelete(general, [first, second]);

    await vi.waitFor(() => expect(gateway.dispatches().map((p) => p.t)).toContain('MESSAGE_DELETE_BULK'));
    const changes = gateway.dispatches().slice(-4);
    expect(changes.map((p) => p.t)).toEqual([
      'MESSAGE_UPDATE',
      'MESSAGE_UPDATE',
      'MESSAGE_DELETE',
      'MESSAGE_DELETE_BULK',
    ]);
    expect(changes[0]?.d).toEqual({
      ...first,
      content: `<@${fake.bot.id}> one!`,
      mentions: [fake.bot],
      edited_timestamp: expect.stringMatching(/Z$/),
    });
    expect(changes[1]?.d).toMatchObject({
      id: first.id,
      content: edited.content,
      edited_timestamp: edited.edited_timestamp,
      embeds: [expect.objectContaining({ type: 'link' })],
    });
    expect(changes[2]?.d).toEqual({ id: before.id, channel_id: before.channel_id });
    expect(changes[3]?.d).toEqual({
      ids: [first.id, second.id],
      channel_id: general.id,
      guild_id: fake.guild.id,
    });
    expect(() => fake.bulkDelete(fake.dm(alice), [before])).toThrow(/guild channels only/);
  });

  it('archives a thread: THREAD_UPDATE, out of the next GUILD_CREATE, changes in it still sent; a post unarchives it', async () => {
    const alice = fake.createUser({ username: 'alice' });
    const thread = fake.guild.channel('deploy-plan');
    const first = await connect();
    await first.identified(fake);
    const message = fake.postMessage({ channel: thread, author: alice, content: 'my address' });

    fake.archiveThread(thread);
    await vi.waitFor(() => expect(first.dispatches().map((p) => p.t)).toContain('THREAD_UPDATE'));
    expect(first.dispatches().at(-1)?.d).toMatchObject({
      id: thread.id,
      thread_metadata: { archived: true },
    });
    // A restarted client: a new session, whose GUILD_CREATE does not name the archived thread.
    first.ws.terminate();
    const second = await connect();
    await second.identified(fake);
    const guildCreate = second.dispatches().find((p) => p.t === 'GUILD_CREATE')?.d as { threads: unknown[] };
    expect(guildCreate.threads).toEqual([]);
    expect(fake.guild.archivedThreads.map((t) => t.id)).toEqual([thread.id]);

    fake.deleteMessage(message);
    fake.bulkDelete(thread, [message]);
    fake.editMessage(message, 'my old address');
    fake.postMessage({ channel: thread, author: alice, content: 'back' });

    await vi.waitFor(() => expect(second.dispatches().map((p) => p.t)).toContain('MESSAGE_CREATE'));
    const after = second.dispatches().slice(-5);
    expect(after.map((p) => [p.t, (p.d as { channel_id?: string; id?: string }).channel_id])).toEqual([
      ['MESSAGE_DELETE', thread.id],
      ['MESSAGE_DELETE_BULK', thread.id],
      ['MESSAGE_UPDATE', thread.id],
      ['THREAD_UPDATE', undefined],
      ['MESSAGE_CREATE', thread.id],
    ]);
    expect(after[3]?.d).toMatchObject({
      id: thread.id,
      parent_id: thread.parent_id,
      thread_metadata: { archived: false },
    });
    expect(fake.guild.threads.map((t) => t.id)).toEqual([thread.id]);
  });

  it('answers a RESUME of an unknown session with a non-resumable INVALID_SESSION', async () => {
    const gateway = await connect();

    gateway.send(GatewayOp.Resume, { token: fake.token, session_id: 'nope', seq: 1 });

    await vi.waitFor(() =>
      expect(gateway.received.at(-1)).toEqual({ op: GatewayOp.InvalidSession, d: false }),
    );
  });

  it('forgets the session on a non-resumable invalidation', async () => {
    const gateway = await connect();
    await gateway.identified(fake);

    fake.invalidateSession();

    await vi.waitFor(() =>
      expect(gateway.received.at(-1)).toEqual({ op: GatewayOp.InvalidSession, d: false }),
    );
    expect(fake.sessionId).toBeUndefined();
    expect(() => fake.dispatch('TYPING_START', {})).toThrow(/no gateway session/);
  });

  it('closes with 4004 on a wrong token and refuses compressed connections', async () => {
    const gateway = await connect();
    gateway.send(GatewayOp.Identify, { token: 'wrong', intents: 0, properties: {} });
    await vi.waitFor(() => expect(gateway.closeCode).toBe(4004));
    const compressed = await connect(fake.gatewayUrl, 'v=10&encoding=json&compress=zlib-stream');

    await vi.waitFor(() => expect(compressed.closeCode).toBe(1003));
    expect(fake.errors).toEqual([
      'IDENTIFY with a wrong token',
      expect.stringMatching(/compress=zlib-stream/),
    ]);
  });
});

describe('snowflakes', () => {
  it('carry their timestamp and increase', () => {
    const at = Date.UTC(2026, 0, 1);
    expect(snowflakeTimestamp(snowflakeAt(at, 7))).toBe(at);
    expect(snowflakeAt(1_420_070_400_000 + 1)).toBe(String(1n << 22n));
    const ids = new SnowflakeGenerator(() => at);
    const [a = '', b = '', c = ''] = [ids.next(), ids.next(), ids.next()];
    expect(BigInt(a) < BigInt(b) && BigInt(b) < BigInt(c)).toBe(true);
    expect(() => snowflakeAt(0)).toThrow(RangeError);
  });
});
