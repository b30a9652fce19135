/**
 * `[mcp.servers.NAME]` as Ebb starts them: the values of `env` and `headers` that name environment
 * variables filled in from the environment (this package is the only reader of `process.env`).
 *
 *   "env:NAME"          the variable's whole value
 *   "Bearer ${NAME}"    the variable's value inside a text (any number of `${…}`)
 *   anything else       itself
 *
 * A variable that is not set is listed in `missingEnv`, and the server fails to start saying which
 * (Ebb itself starts). The resolved values are secrets: hand them to the transport, never log them.
 */
import type { McpServerSpec } from '@ebb/core';
import type { McpServerSection } from './config-schema.js';
import type { DeepReadonly } from './deep-freeze.js';
import type { EbbConfig } from './ebb-config.js';

/** An MCP server with its secrets resolved: core's `McpServerSpec`, which `@ebb/tools` starts. */
export type ResolvedMcpServer = McpServerSpec;

const ENV_PREFIX = 'env:';
const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function mcpServerSpecs(
  config: EbbConfig,
  source: Readonly<Record<string, string | undefined>> = process.env,
): ResolvedMcpServer[] {
  return Object.entries(config.mcp.servers).map(([name, server]) => resolveServer(name, server, source));
}

/** The environment variables a value refers to (`env:NAME`, `${NAME}`). */
export function envReferences(value: string): string[] {
  if (value.startsWith(ENV_PREFIX)) return [value.slice(ENV_PREFIX.length)];
  return [...value.matchAll(PLACEHOLDER)].map((match) => match[1] ?? '');
}

function resolveServer(
  name: string,
  server: DeepReadonly<McpServerSection>,
  source: Readonly<Record<string, string | undefined>>,
): ResolvedMcpServer {
  const missing = new Set<string>();
  const resolve = (values: Readonly<Record<string, string>> | undefined) =>
    Object.fromEntries(
      Object.entries(values ?? {}).map(([key, value]) => [key, resolveValue(value, source, missing)]),
    );
  if (server.url !== undefined) {
    const headers = resolve(server.headers);
    return { name, transport: 'http', url: server.url, headers, missingEnv: [...missing] };
  }
  const env = resolve(server.env);
  return {
    name,
    transport: 'stdio',
    command: server.command ?? '',
    args: [...(server.args ?? [])],
    env,
    missingEnv: [...missing],
  };
}

function resolveValue(
  value: string,
  source: Readonly<Record<string, string | undefined>>,
  missing: Set<string>,
): string {
  const lookup = (variable: string) => {
    const found = source[variable];
    if (found === undefined || found === '') missing.add(variable);
    return found ?? '';
  };
  if (value.startsWith(ENV_PREFIX)) return lookup(value.slice(ENV_PREFIX.length));
  return value.replace(PLACEHOLDER, (_match, variable: string) => lookup(variable));
}
