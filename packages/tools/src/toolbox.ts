/**
 * The tools a channel may use: the built-in ones and the MCP servers' ready tools, filtered by the
 * channel's `[tools] allow` patterns (`allow-patterns.ts`). Taken once per turn, so a server that
 * comes back or goes away changes what the next turn offers, never a turn half-way.
 */
import type { Tool, ToolCall, ToolSpec } from '@ebb/core';
import { isToolAllowed } from './allow-patterns.js';
import type { McpServers } from './mcp-servers.js';
import { runToolCall, type ToolCallReport } from './run-tool-call.js';

export interface ToolboxOptions {
  /** Tools Ebb brings (`search_history`, `read_history`). */
  readonly builtIns: readonly Tool[];
  readonly mcp?: Pick<McpServers, 'tools'>;
}

export interface ChannelToolsCallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** One channel's tools for one turn. */
export interface ChannelTools {
  readonly specs: readonly ToolSpec[];
  call(call: ToolCall, options: ChannelToolsCallOptions): Promise<ToolCallReport>;
}

export class Toolbox {
  readonly #options: ToolboxOptions;

  constructor(options: ToolboxOptions) {
    this.#options = options;
  }

  /** The tools `allow` lets `channelKey` use, as they are now. */
  forChannel(channelKey: string, allow: readonly string[]): ChannelTools {
    const all = [...this.#options.builtIns, ...(this.#options.mcp?.tools() ?? [])];
    const tools = new Map<string, Tool>();
    for (const tool of all) {
      if (isToolAllowed(allow, tool.spec.name) && !tools.has(tool.spec.name)) tools.set(tool.spec.name, tool);
    }
    const specs = [...tools.values()].map((tool) => tool.spec);
    const available = specs.map((spec) => spec.name);
    return {
      specs,
      call: (call, options) =>
        runToolCall(tools.get(call.name), call, {
          channelKey,
          timeoutMs: options.timeoutMs,
          available,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        }),
    };
  }
}
