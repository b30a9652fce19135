/**
 * The MCP servers for `ebb status`: each one in `[mcp.servers]`, with its live state when Ebb is
 * running: read from that process's `/healthz` (the `[web]` address, loopback for a wildcard host),
 * since only the process that started a server knows how it is doing. Unreachable: state `null`.
 * `/healthz` is public, so it shows no error: why a server failed is in that process's log
 * (`mcp.server_failed`), and the text form says so.
 */
import type { EbbConfig } from '@ebb/config';
import type { LiveHealth } from './live-health.js';

export interface McpServerStatusRow {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
  /** From the running Ebb; null when it could not be asked. */
  readonly state: {
    readonly status: string;
    readonly tools: number;
    readonly restarts: number;
  } | null;
}

/** Each configured server, with its state in `live` (the running Ebb's `/healthz`, when it answered). */
export function mcpServerStatus(config: EbbConfig, live: LiveHealth | undefined): McpServerStatusRow[] {
  return Object.entries(config.mcp.servers).map(([name, server]) => {
    const state = live?.mcp?.[name];
    return {
      name,
      transport: server.url === undefined ? 'stdio' : 'http',
      state:
        state === undefined ? null : { status: state.status, tools: state.tools, restarts: state.restarts },
    };
  });
}

/** The text form: one line per server. */
export function formatMcpStatus(rows: readonly McpServerStatusRow[]): string[] {
  if (rows.length === 0) return [];
  const lines = ['', 'MCP servers'];
  for (const row of rows) {
    const state = row.state;
    const live =
      state === null
        ? 'state unknown (Ebb is not running, or its /healthz is not reachable)'
        : `${state.status}, ${state.tools} tools, ${state.restarts} restarts${state.status === 'failed' ? " (why: mcp.server_failed in Ebb's log)" : ''}`;
    lines.push(`  ${row.name}  ${row.transport}  ${live}`);
  }
  return lines;
}
