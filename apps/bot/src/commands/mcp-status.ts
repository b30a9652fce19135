/**
 * The MCP servers for `ebb status`: each one in `[mcp.servers]`, with its live state when Ebb is
 * running: read from that process's `/healthz` (the `[web]` address, loopback for a wildcard host),
 * since only the process that started a server knows how it is doing. Unreachable: state `null`.
 * `/healthz` is public, so it shows no error: why a server failed is in that process's log
 * (`mcp.server_failed`), and the text form says so.
 */
import type { EbbConfig } from '@ebb/config';

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

const HEALTH_TIMEOUT_MS = 1_000;

export async function mcpServerStatus(
  config: EbbConfig,
  fetchImpl: typeof fetch = fetch,
): Promise<McpServerStatusRow[]> {
  const names = Object.entries(config.mcp.servers);
  if (names.length === 0) return [];
  const live = await readHealth(config, fetchImpl);
  return names.map(([name, server]) => {
    const state = live?.[name];
    return {
      name,
      transport: server.url === undefined ? 'stdio' : 'http',
      state:
        state === undefined ? null : { status: state.status, tools: state.tools, restarts: state.restarts },
    };
  });
}

type LiveStates = Record<string, { status: string; tools: number; restarts: number }>;

async function readHealth(config: EbbConfig, fetchImpl: typeof fetch): Promise<LiveStates | undefined> {
  const host = ['0.0.0.0', '::', ''].includes(config.web.host) ? '127.0.0.1' : config.web.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.web.port}/healthz`;
  try {
    const res = await fetchImpl(url, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    const body = (await res.json()) as { mcp?: LiveStates };
    return body.mcp;
  } catch {
    return undefined;
  }
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
