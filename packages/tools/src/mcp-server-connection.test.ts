/**
 * How a ready HTTP MCP server's pings decide whether it is still there, through the real MCP SDK
 * client against the fake MCP server over streamable HTTP. The fake answers `ping` itself (as every
 * SDK server does), so it sits behind an `McpHttpFront` that answers pings as the test scripts them
 * and forwards everything else.
 */
import { FakeMcpHttpServer, McpHttpFront } from '@ebb/testing/mcp';
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

/** A front that answers pings as `script` says (noting each in `pings`) and forwards the rest. */
async function pingFront(upstream: string, script: (nth: number) => PingAnswer) {
  const pings: PingAnswer[] = [];
  const front = await McpHttpFront.start(upstream, {
    intercept: (message, req, res) => {
      if (message.method !== 'ping') return false;
      const answer = script(pings.length + 1);
      pings.push(answer);
      switch (answer) {
        case 'forward':
          return false;
        case 'error':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              id: message.id,
              error: { code: -32601, message: 'Method not found' },
            }),
          );
          return true;
        case 'hang':
          return true;
        case 'cut':
          req.socket.destroy();
          return true;
      }
    },
  });
  return { front, pings };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** McpServers with one HTTP server `dir` (the fake with `echo`, behind a front) pinged every 250 ms. */
async function behindFront(script: (nth: number) => PingAnswer) {
  const fake = await FakeMcpHttpServer.start({ tools: ['echo'] });
  closers.push(() => fake.close());
  const { front, pings } = await pingFront(fake.url, script);
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
  return { mcp, pings, logger };
}

async function echo(mcp: McpServers, text: string) {
  const tools = new Toolbox({ builtIns: [], mcp }).forChannel('web:a', ['dir.*']);
  const call = { id: 'call_1', name: 'dir.echo', arguments: JSON.stringify({ text }) };
  return (await tools.call(call, { timeoutMs: 5_000 })).outcome;
}

describe('McpServerConnection pings', () => {
  it('keeps a server that answers its pings with a JSON-RPC error: it answered, so it is there', async () => {
    const { mcp, pings, logger } = await behindFront(() => 'error');
    // The third ping is sent only once the second was settled, so two errors reached the client.
    await vi.waitFor(() => expect(pings.length).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
    expect(mcp.states().dir).toEqual({ status: 'ready', transport: 'http', tools: 1, restarts: 0 });
    expect(logger.events('mcp.ping_missed')).toEqual([]);
    expect(logger.events('mcp.server_lost')).toEqual([]);
    expect(await echo(mcp, 'still here')).toEqual({ text: 'still here', isError: false });
  });

  it('keeps a server through one missed ping, and restarts it with backoff after two in a row', async () => {
    const script: Record<number, PingAnswer> = { 1: 'hang', 3: 'hang', 4: 'cut' };
    const { mcp, pings, logger } = await behindFront((nth) => script[nth] ?? 'forward');

    // Ping 1 timed out and ping 2 was answered (ping 3 follows only then): the same connection.
    await vi.waitFor(() => expect(pings.length).toBeGreaterThanOrEqual(3), { timeout: 5_000 });
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
