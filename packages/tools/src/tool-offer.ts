/**
 * Which of the tools a channel's `[tools] allow` lets it use are offered to the model. OpenAI
 * refuses a request with more than 128 tools, so a channel that allows more (`allow = ["*"]` with a
 * big MCP server) would fail every turn; it is offered the first `MAX_TOOLS_PER_CHANNEL` of them in
 * the order given: the built-in tools first, then each MCP server's in `config.toml` order, each
 * server's by name (`McpServers.tools()`), so the same tools are left out every turn. The toolbox
 * and `ebb config check` decide with this same function.
 *
 * Pure: no I/O.
 */
import { isToolAllowed } from './allow-patterns.js';

/** The most tools one request offers (OpenAI's limit). */
export const MAX_TOOLS_PER_CHANNEL = 128;

export interface ToolOffer {
  /** Allowed and offered, in order. */
  readonly offered: readonly string[];
  /** Allowed but past `MAX_TOOLS_PER_CHANNEL`, in order. */
  readonly leftOut: readonly string[];
}

/** `names` in offer order; a name that comes again is the same tool and counted once. */
export function planToolOffer(names: readonly string[], allow: readonly string[]): ToolOffer {
  const allowed = [...new Set(names)].filter((name) => isToolAllowed(allow, name));
  return { offered: allowed.slice(0, MAX_TOOLS_PER_CHANNEL), leftOut: allowed.slice(MAX_TOOLS_PER_CHANNEL) };
}
