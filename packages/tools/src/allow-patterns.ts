/**
 * Which tools a channel may use: `[tools] allow` is a list of patterns over tool names. A built-in
 * tool is named bare (`search_history`); an MCP tool `server.tool` (`github.search_issues`). `*`
 * matches any run of characters, dots included, so `github.*` is every tool of `github` and `*` is
 * every tool there is. Matching is exact and case-sensitive otherwise.
 */
import { LruMap } from '@ebb/core';

const MAX_CACHED_PATTERNS = 1_000;
const compiled = new LruMap<string, RegExp>(MAX_CACHED_PATTERNS);

export function patternMatchesTool(pattern: string, toolName: string): boolean {
  let regex = compiled.get(pattern);
  if (!regex) {
    const body = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    regex = new RegExp(`^${body}$`);
    compiled.set(pattern, regex);
  }
  return regex.test(toolName);
}

export function isToolAllowed(allow: readonly string[], toolName: string): boolean {
  return allow.some((pattern) => patternMatchesTool(pattern, toolName));
}

/** The server a pattern names (`github` of `github.*`), or undefined for a bare (built-in) pattern. */
export function patternServer(pattern: string): string | undefined {
  const dot = pattern.indexOf('.');
  return dot < 0 ? undefined : pattern.slice(0, dot);
}

/** An MCP tool's name as the model and `[tools] allow` see it: `server.tool`. */
export function mcpToolName(server: string, tool: string): string {
  return `${server}.${tool}`;
}
