import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeMcpHttpServer } from './fake-mcp-http.js';
import { fakeMcpStdioCommand } from './fake-mcp-stdio-command.js';
import { FAKE_BUILD_FAILURE, FAKE_MCP_TOOLS } from './fake-mcp-tools.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
});

async function connected(transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  closers.push(() => client.close());
  return client;
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as { type: string; text: string }[]).map((c) => c.text).join('');
}

describe('the fake MCP server', () => {
  it('serves its tools over streamable HTTP, and crashes and restarts on the same port', async () => {
    const fake = await FakeMcpHttpServer.start({ lookup: { ana: 'Ana runs the deploys' } });
    closers.push(() => fake.close());
    const client = await connected(new StreamableHTTPClientTransport(new URL(fake.url)));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual([...FAKE_MCP_TOOLS]);
    expect(textOf(await client.callTool({ name: 'lookup', arguments: { key: 'ana' } }))).toBe(
      'Ana runs the deploys',
    );
    const failed = await client.callTool({ name: 'fail', arguments: {} });
    expect([failed.isError, textOf(failed)]).toEqual([true, FAKE_BUILD_FAILURE]);
    await expect(client.callTool({ name: 'throw', arguments: {} })).rejects.toThrow(/unreachable/);
    await expect(
      client.callTool({ name: 'hang', arguments: {} }, undefined, { timeout: 200 }),
    ).rejects.toThrow(/timed out/i);

    await fake.crash();
    await expect(client.callTool({ name: 'echo', arguments: { text: 'x' } })).rejects.toThrow();
    await fake.restart();
    const again = await connected(new StreamableHTTPClientTransport(new URL(fake.url)));
    expect(textOf(await again.callTool({ name: 'echo', arguments: { text: 'back' } }))).toBe('back');
  });

  it('serves the same tools over stdio, and its crash tool ends the process', async () => {
    const { command, args } = fakeMcpStdioCommand({ tools: ['echo', 'build_log', 'crash'] });
    const transport = new StdioClientTransport({ command, args: [...args], stderr: 'ignore' });
    const client = await connected(transport);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo', 'build_log', 'crash']);
    expect(textOf(await client.callTool({ name: 'build_log', arguments: {} })).split('\n')).toHaveLength(400);
    const closed = new Promise<void>((resolve) => {
      client.onclose = () => resolve();
    });
    await expect(client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow(/closed/i);
    await closed;
  });
});
