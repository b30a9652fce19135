import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '@ebb/config';
import { describe, expect, it } from 'vitest';
import { readLiveHealth } from './live-health.js';
import { formatMcpStatus, mcpServerStatus } from './mcp-status.js';

const servers = [
  '[mcp.servers.dir]',
  'command = "dir-mcp"',
  '[mcp.servers.gh]',
  'url = "http://127.0.0.1:9/mcp"',
  '[mcp.servers.late]',
  'command = "late-mcp"',
];

describe('ebb status: MCP servers', () => {
  it('shows each configured server with the running Ebb’s state from /healthz', async () => {
    const health = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ok: true,
          mcp: {
            dir: { status: 'ready', tools: 3, restarts: 1 },
            // An older Ebb's /healthz had the error; it is not shown even then.
            gh: { status: 'failed', tools: 0, restarts: 4, lastError: 'ENOTFOUND mcp.internal.corp' },
          },
        }),
      );
    });
    await new Promise<void>((resolve) => health.listen(0, '127.0.0.1', resolve));
    const { port } = health.address() as AddressInfo;
    try {
      const config = parseConfig([...servers, '[web]', `port = ${port}`].join('\n'), 'config.toml');
      const rows = mcpServerStatus(config, await readLiveHealth(config));
      expect(rows).toEqual([
        {
          name: 'dir',
          transport: 'stdio',
          state: { status: 'ready', tools: 3, restarts: 1 },
        },
        { name: 'gh', transport: 'http', state: { status: 'failed', tools: 0, restarts: 4 } },
        // Not in the running process's report (configured after it started): no state.
        { name: 'late', transport: 'stdio', state: null },
      ]);
      expect(formatMcpStatus(rows)).toEqual([
        '',
        'MCP servers',
        '  dir  stdio  ready, 3 tools, 1 restarts',
        "  gh  http  failed, 0 tools, 4 restarts (why: mcp.server_failed in Ebb's log)",
        '  late  stdio  state unknown (Ebb is not running, or its /healthz is not reachable)',
      ]);
    } finally {
      await new Promise((resolve) => health.close(resolve));
    }
  });

  it('lists the servers without a state when Ebb is not running, and nothing without servers', async () => {
    const closed = parseConfig([...servers, '[web]', 'port = 9'].join('\n'), 'config.toml');
    expect(mcpServerStatus(closed, await readLiveHealth(closed)).map((row) => row.state)).toEqual([
      null,
      null,
      null,
    ]);
    expect(mcpServerStatus(parseConfig('', 'config.toml'), undefined)).toEqual([]);
  });
});
