import { describe, expect, it } from 'vitest';
import { healthCheck } from './health.js';

describe('healthCheck: MCP servers', () => {
  it('shows a server’s state, tool count and restarts only: /healthz is public, the error is in the log', async () => {
    // As `McpServers.states()` gives them: with the transport and the last error.
    const states = {
      github: {
        status: 'failed',
        transport: 'http',
        tools: 0,
        restarts: 3,
        lastError: 'connect ECONNREFUSED mcp-github.internal.corp:8443 (GITHUB_TOKEN from /etc/ebb/env)',
      },
      dir: { status: 'ready', transport: 'stdio', tools: 4, restarts: 0 },
    } as const;
    const report = await healthCheck({ checks: {}, mcp: states });
    expect(report.mcp).toEqual({
      github: { status: 'failed', tools: 0, restarts: 3 },
      dir: { status: 'ready', tools: 4, restarts: 0 },
    });
    expect(JSON.stringify(report)).not.toMatch(/internal|GITHUB_TOKEN|transport/);
  });
});
