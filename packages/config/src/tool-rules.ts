/**
 * Rules on `[tools] allow` that need the rest of the file: a pattern `server.tool` must name a
 * server of `[mcp.servers]` (unless its server part is a glob), and a bare pattern must be a
 * built-in tool (unless it is a glob). Checked at every place that sets `allow`. Whether a pattern
 * matches any tool of its server can only be known with the server running: `ebb config check`
 * starts them briefly and warns.
 */
import { HISTORY_TOOL_NAMES, PLATFORMS } from '@ebb/core';
import type { ConfigIssue } from './config-error.js';
import type { EbbConfig } from './ebb-config.js';
import { settingsLayerOf } from './ebb-config.js';
import { formatTomlPath } from './toml-path.js';

export function checkToolRules(config: EbbConfig, file: string): ConfigIssue[] {
  const servers = Object.keys(config.mcp.servers);
  return allowPatternsOf(config).flatMap(({ path, pattern }) => {
    const rule = patternProblem(pattern, servers);
    return rule === undefined ? [] : [{ file, path, rule, found: pattern }];
  });
}

/** Every `[tools] allow` pattern written in the file, with its TOML path (`web.tools.allow[1]`). */
export function allowPatternsOf(config: EbbConfig): { readonly path: string; readonly pattern: string }[] {
  const places: { readonly at: readonly string[]; readonly allow: readonly string[] | undefined }[] = [
    { at: [], allow: config.sections.tools?.allow },
    ...PLATFORMS.map((platform) => ({
      at: [platform],
      allow: settingsLayerOf(config[platform]).tools?.allow,
    })),
    ...config.channels.map((block) => ({ at: ['channels', block.pattern], allow: block.tools?.allow })),
  ];
  return places.flatMap(({ at, allow }) =>
    (allow ?? []).map((pattern, index) => ({
      path: formatTomlPath([...at, 'tools', 'allow', index]),
      pattern,
    })),
  );
}

function patternProblem(pattern: string, servers: readonly string[]): string | undefined {
  const dot = pattern.indexOf('.');
  if (dot < 0) {
    if (pattern.includes('*') || (HISTORY_TOOL_NAMES as readonly string[]).includes(pattern))
      return undefined;
    return `must name a built-in tool (${HISTORY_TOOL_NAMES.join(', ')}) or an MCP server's tool as server.tool`;
  }
  const server = pattern.slice(0, dot);
  if (server.includes('*') || servers.includes(server)) return undefined;
  const known = servers.length === 0 ? 'no [mcp.servers] are configured' : `servers: ${servers.join(', ')}`;
  return `must name a server of [mcp.servers]: there is no [mcp.servers.${server}] (${known})`;
}
