/**
 * McpServers through the real MCP SDK client against the fake MCP server, over stdio (a process of
 * its own) and streamable HTTP: tools listed and called, every failure an outcome, crashes restarted
 * with backoff, a server that cannot start never in the way.
 */
import { FAKE_BUILD_FAILURE, FakeMcpHttpServer, fakeMcpStdioCommand } from '@ebb/testing/mcp';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { McpServerSpec } from './mcp-server-connection.js';
import { McpServers } from './mcp-servers.js';
import { Toolbox } from './toolbox.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function stdio(name: string, options: Parameters<typeof fakeMcpStdioCommand>[0] = {}): McpServerSpec {
  const { command, args } = fakeMcpStdioCommand(options);
  return { name, transport: 'stdio', command, args, env: {}, missingEnv: [] };
}

async function started(servers: readonly McpServerSpec[], logger = new RecordingLogger()) {
  const mcp = new McpServers({ servers, logger, backoff: { initialDelayMs: 50, maxDelayMs: 400 } });
  closers.push(() => mcp.close());
  await mcp.start();
  return mcp;
}

const call = (name: string, args: object = {}) => ({ id: 'call_1', name, arguments: JSON.stringify(args) });

describe('McpServers', () => {
  it('lists the tools of a stdio and an HTTP server as server.tool and calls them', async () => {
    const http = await FakeMcpHttpServer.start({
      tools: ['echo', 'lookup'],
      lookup: { ana: 'Ana runs deploys' },
    });
    closers.push(() => http.close());
    const mcp = await started([
      stdio('ci', { tools: ['echo', 'build_log'] }),
      {
        name: 'dir',
        transport: 'http',
        url: http.url,
        headers: { authorization: 'Bearer s3cret' },
        missingEnv: [],
      },
    ]);
    expect(mcp.states()).toEqual({
      ci: { status: 'ready', transport: 'stdio', tools: 2, restarts: 0 },
      dir: { status: 'ready', transport: 'http', tools: 2, restarts: 0 },
    });
    const tools = new Toolbox({ builtIns: [], mcp }).forChannel('web:a', ['*']);
    // Servers in config order, each one's tools by name (ci lists echo before build_log).
    expect(tools.specs.map((s) => s.name)).toEqual(['ci.build_log', 'ci.echo', 'dir.echo', 'dir.lookup']);
    expect(tools.specs[1]?.parameters).toMatchObject({ type: 'object', required: ['text'] });

    const looked = await tools.call(call('dir.lookup', { key: 'ana' }), { timeoutMs: 5_000 });
    expect(looked).toMatchObject({ status: 'ok', outcome: { text: 'Ana runs deploys', isError: false } });
    expect(http.requestHeaders.at(-1)?.authorization).toBe('Bearer s3cret');
    const log = await tools.call(call('ci.build_log'), { timeoutMs: 5_000 });
    expect(log.outcome.text.split('\n')).toHaveLength(400);
  });

  it('gives the channel only what its patterns allow', async () => {
    const mcp = await started([stdio('ci', { tools: ['echo', 'build_log'] })]);
    const builtIn = {
      spec: { name: 'search_history', description: '', parameters: {} },
      call: async () => ({ text: '', isError: false }),
    };
    const toolbox = new Toolbox({ builtIns: [builtIn], mcp });
    expect(toolbox.forChannel('web:a', ['search_history']).specs.map((s) => s.name)).toEqual([
      'search_history',
    ]);
    expect(toolbox.forChannel('web:a', ['ci.build_*']).specs.map((s) => s.name)).toEqual(['ci.build_log']);
    const none = toolbox.forChannel('web:a', ['search_history']);
    // A tool the channel may not use is unknown to it, even though its server has it.
    expect((await none.call(call('ci.echo', { text: 'x' }), { timeoutMs: 1_000 })).status).toBe(
      'unknown_tool',
    );
  });

  it('makes an isError result, a JSON-RPC error and a hang into outcomes the model reads', async () => {
    const mcp = await started([stdio('ci', { tools: ['fail', 'throw', 'hang', 'echo'] })]);
    const tools = new Toolbox({ builtIns: [], mcp }).forChannel('web:a', ['ci.*']);
    expect(await tools.call(call('ci.fail'), { timeoutMs: 5_000 })).toMatchObject({
      status: 'error',
      outcome: { text: FAKE_BUILD_FAILURE, isError: true },
    });
    const thrown = await tools.call(call('ci.throw'), { timeoutMs: 5_000 });
    expect(thrown.status).toBe('error');
    expect(thrown.outcome.text).toMatch(/^The MCP server ci answered with an error: .*unreachable\.$/);
    const hung = await tools.call(call('ci.hang'), { timeoutMs: 300 });
    expect(hung).toMatchObject({ status: 'timeout', outcome: { isError: true } });
    // The server is still up after all three.
    expect(
      (await tools.call(call('ci.echo', { text: 'still here' }), { timeoutMs: 5_000 })).outcome.text,
    ).toBe('still here');
  });

  it('restarts a stdio server that crashed, and its tools come back', async () => {
    const logger = new RecordingLogger();
    const mcp = await started([stdio('ci', { tools: ['echo', 'crash'] })], logger);
    const toolbox = new Toolbox({ builtIns: [], mcp });
    const crashed = await toolbox.forChannel('web:a', ['ci.*']).call(call('ci.crash'), { timeoutMs: 5_000 });
    expect(crashed.status).toBe('error');
    expect(crashed.outcome.text).toMatch(/^The connection to the MCP server ci broke during the call/);
    expect(logger.events('mcp.server_lost')).toHaveLength(1);
    // While it is away the channel is offered none of its tools.
    expect(toolbox.forChannel('web:a', ['ci.*']).specs).toEqual([]);
    await vi.waitFor(() => expect(mcp.states().ci?.status).toBe('ready'), { timeout: 10_000 });
    expect(mcp.states().ci).toMatchObject({
      restarts: 1,
      tools: 2,
      lastError: expect.stringMatching(/closed/i),
    });
    const again = await toolbox
      .forChannel('web:a', ['ci.*'])
      .call(call('ci.echo', { text: 'back' }), { timeoutMs: 5_000 });
    expect(again.outcome.text).toBe('back');
  });

  it('reconnects to an HTTP server that went away once it is back', async () => {
    const http = await FakeMcpHttpServer.start({ tools: ['echo'] });
    closers.push(() => http.close());
    const mcp = await started([
      { name: 'dir', transport: 'http', url: http.url, headers: {}, missingEnv: [] },
    ]);
    const tools = new Toolbox({ builtIns: [], mcp }).forChannel('web:a', ['dir.*']);
    await http.crash();
    const broken = await tools.call(call('dir.echo', { text: 'x' }), { timeoutMs: 5_000 });
    expect(broken.outcome.text).toMatch(/^The connection to the MCP server dir broke during the call/);
    expect(mcp.states().dir?.status).not.toBe('ready');
    await http.restart();
    await vi.waitFor(() => expect(mcp.states().dir?.status).toBe('ready'), { timeout: 10_000 });
  });

  it('notices an HTTP server that went away without any call (a ping), and takes it back when it returns', async () => {
    const http = await FakeMcpHttpServer.start({ tools: ['echo'] });
    closers.push(() => http.close());
    const logger = new RecordingLogger();
    const mcp = new McpServers({
      servers: [{ name: 'dir', transport: 'http', url: http.url, headers: {}, missingEnv: [] }],
      logger,
      backoff: { initialDelayMs: 50, maxDelayMs: 400 },
      pingIntervalMs: 100,
    });
    closers.push(() => mcp.close());
    await mcp.start();
    expect(mcp.states().dir?.status).toBe('ready');
    expect(mcp.tools().map((t) => t.spec.name)).toEqual(['dir.echo']);

    await http.crash();
    await vi.waitFor(() => expect(mcp.states().dir?.status).not.toBe('ready'), { timeout: 5_000 });
    expect(mcp.states().dir?.lastError).toMatch(/^it did not answer 2 pings in a row/);
    // A server that is not ready offers no tools: the model is not told of tools that cannot answer.
    expect(mcp.tools()).toEqual([]);
    expect(logger.events('mcp.server_lost')).toHaveLength(1);

    await http.restart();
    await vi.waitFor(() => expect(mcp.states().dir?.status).toBe('ready'), { timeout: 10_000 });
    expect(mcp.tools().map((t) => t.spec.name)).toEqual(['dir.echo']);
  });

  it('never waits for a server that cannot start: it is failed, logged and retried with backoff', async () => {
    const logger = new RecordingLogger();
    const mcp = await started(
      [
        {
          name: 'gone',
          transport: 'stdio',
          command: '/nonexistent/mcp-server',
          args: [],
          env: {},
          missingEnv: [],
        },
        {
          name: 'nokey',
          transport: 'http',
          url: 'http://127.0.0.1:9/mcp',
          headers: {},
          missingEnv: ['GITHUB_TOKEN'],
        },
        stdio('ci', { tools: ['echo'] }),
      ],
      logger,
    );
    expect(mcp.states().ci?.status).toBe('ready');
    // Between tries a server that cannot start is failed; a try may be under way when this looks
    // (the backoff starts at 50 ms, and ci's start can take longer on a loaded machine), so wait for
    // the state between two tries rather than assume it.
    await vi.waitFor(() => {
      expect(mcp.states().gone).toMatchObject({ status: 'failed', tools: 0 });
      expect(mcp.states().nokey).toMatchObject({
        status: 'failed',
        lastError: 'environment variable GITHUB_TOKEN not set',
      });
    });
    await vi.waitFor(
      () =>
        expect(
          logger.events('mcp.server_failed').filter((e) => e.fields.server === 'gone').length,
        ).toBeGreaterThanOrEqual(3),
      {
        timeout: 10_000,
      },
    );
    const delays = logger
      .events('mcp.server_failed')
      .filter((e) => e.fields.server === 'gone')
      .map((e) => e.fields.retryInMs);
    expect(delays.slice(0, 3)).toEqual([50, 100, 200]);
    expect(mcp.states().gone?.restarts).toBeGreaterThanOrEqual(2);
    // A call to a tool of a failed server never reached here: its tools are not offered at all.
    expect(new Toolbox({ builtIns: [], mcp }).forChannel('web:a', ['*']).specs.map((s) => s.name)).toEqual([
      'ci.echo',
    ]);
  });
});
