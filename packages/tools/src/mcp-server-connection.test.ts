/**
 * How a ready HTTP MCP server's pings decide whether it is still there, through the real MCP SDK
 * client against the fake MCP server over streamable HTTP. The fake answers `ping` itself (as every
 * SDK server does), so it sits behind `PingFront`, which answers pings as the test scripts them and
 * forwards everything else.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeMcpHttpServer } from '@ebb/testing/mcp';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { McpServers } from './mcp-servers.js';
import { Toolbox } from './toolbox.js';

/**
 * What the front does with the nth ping: pass it to the fake (which answers), answer it with a
 * JSON-RPC error (MethodNotFound, as a server without `ping` does), never answer, or cut its
 * connection.
 */
type PingAnswer = 'forward' | 'error' | 'hang' | 'cut';

class PingFront {
  /** What each ping seen got, oldest first. */
  readonly pings: PingAnswer[] = [];
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(upstream: string, script: (nth: number) => PingAnswer): Promise<PingFront> {
    const server = createServer();
    const front = new PingFront(server);
    server.on('request', async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      const message =
        body.length > 0 ? (JSON.parse(body.toString()) as { id?: unknown; method?: unknown }) : {};
      const answer = message.method === 'ping' ? script(front.pings.length + 1) : 'forward';
      if (message.method === 'ping') front.pings.push(answer);
      switch (answer) {
        case 'forward': {
          const forwarded = request(upstream, { method: req.method, headers: req.headers }, (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          });
          forwarded.on('error', () => res.destroy());
          res.on('close', () => forwarded.destroy());
          forwarded.end(body);
          return;
        }
        case 'error':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: message.id,
              error: { code: -32601, message: 'Method not found' },
            }),
          );
          return;
        case 'hang':
          return;
        case 'cut':
          req.socket.destroy();
          return;
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return front;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/mcp`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** McpServers with one HTTP server `dir` (the fake with `echo`, behind a front) pinged every 250 ms. */
async function behindFront(script: (nth: number) => PingAnswer) {
  const fake = await FakeMcpHttpServer.start({ tools: ['echo'] });
  closers.push(() => fake.close());
  const front = await PingFront.start(fake.url, script);
  closers.push(() => front.close());
  const logger = new RecordingLogger();
  const mcp = new McpServers({
    servers: [{ name: 'dir', transport: 'http', url: front.url, headers: {}, missingEnv: [] }],
    logger,
    backoff: { initialDelayMs: 50, maxDelayMs: 400 },
    pingIntervalMs: 250,
  });
  closers.push(() => mcp.close());
  await mcp.start();
  expect(mcp.states().dir?.status).toBe('ready');
  return { mcp, front, logger };
}

async function echo(mcp: McpServers, text: string) {
  const tools = new Toolbox({ builtIns: [], mcp }).forChannel('web:a', ['dir.*']);
  const call = { id: 'call_1', name: 'dir.echo', arguments: JSON.stringify({ text }) };
  return (await tools.call(call, { timeoutMs: 5_000 })).outcome;
}

describe('McpServerConnection pings', () => {
  it('keeps a server that answers its pings with a JSON-RPC error: it answered, so it is there', async () => {
    const { mcp, front, logger } = await behindFront(() => 'error');
    // The third ping is sent only once the second was settled, so two errors reached the client.
    await vi.waitFor(() => expect(front.pings.length).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
    expect(mcp.states().dir).toEqual({ status: 'ready', transport: 'http', tools: 1, restarts: 0 });
    expect(logger.events('mcp.ping_missed')).toEqual([]);
    expect(logger.events('mcp.server_lost')).toEqual([]);
    expect(await echo(mcp, 'still here')).toEqual({ text: 'still here', isError: false });
  });

  it('keeps a server through one missed ping, and restarts it with backoff after two in a row', async () => {
    const script: Record<number, PingAnswer> = { 1: 'hang', 3: 'hang', 4: 'cut' };
    const { mcp, front, logger } = await behindFront((nth) => script[nth] ?? 'forward');

    // Ping 1 timed out and ping 2 was answered (ping 3 follows only then): the same connection.
    await vi.waitFor(() => expect(front.pings.length).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
    expect(logger.events('mcp.ping_missed').map((e) => e.fields.error)).toEqual([
      'MCP error -32001: Request timed out',
    ]);
    expect(logger.events('mcp.server_lost')).toEqual([]);
    expect(mcp.states().dir).toMatchObject({ status: 'ready', restarts: 0 });

    // Ping 3 timed out too, but after an answer: one in a row. Ping 4's connection was cut: two.
    await vi.waitFor(() => expect(logger.events('mcp.server_lost')).toHaveLength(1), { timeout: 5_000 });
    expect(logger.events('mcp.ping_missed')).toHaveLength(2);
    expect(logger.events('mcp.server_lost')[0]?.fields).toMatchObject({
      error: 'it did not answer 2 pings in a row (fetch failed)',
      // The first step of the backoff a crash gets.
      retryInMs: 50,
    });
    expect(mcp.tools()).toEqual([]);

    await vi.waitFor(() => expect(mcp.states().dir).toMatchObject({ status: 'ready', restarts: 1 }), {
      timeout: 5_000,
    });
    expect(await echo(mcp, 'back')).toEqual({ text: 'back', isError: false });
  });
});
