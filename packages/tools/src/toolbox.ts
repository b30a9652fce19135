/**
 * The tools a channel may use: the built-in ones and the MCP servers' ready tools, filtered by the
 * channel's `[tools] allow` patterns (`allow-patterns.ts`) and capped at the 128 a request may
 * offer (`tool-offer.ts`). Taken once per turn, so a server that comes back or goes away changes
 * what the next turn offers, never a turn half-way.
 */
import { type Logger, LruMap, type Tool, type ToolCall, type ToolSpec } from '@ebb/core';
import type { McpServers } from './mcp-servers.js';
import { runToolCall, type ToolCallReport } from './run-tool-call.js';
import { MAX_TOOLS_PER_CHANNEL, planToolOffer, type ToolOffer } from './tool-offer.js';

export interface ToolboxOptions {
  /** Tools Ebb brings (`search_history`, `read_history`). */
  readonly builtIns: readonly Tool[];
  readonly mcp?: Pick<McpServers, 'tools'>;
  /** Where `tools.trimmed` is said when a channel allows more tools than a request may offer. */
  readonly logger?: Logger;
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

/** Trimmed tool sets already logged (by allow patterns and what they matched); bounded. */
const MAX_REMEMBERED_TRIMS = 1_000;
/** Names of left-out tools a `tools.trimmed` line lists; the count says the rest. */
const MAX_LOGGED_LEFT_OUT = 20;

export class Toolbox {
  readonly #options: ToolboxOptions;
  readonly #trimsLogged = new LruMap<string, true>(MAX_REMEMBERED_TRIMS);

  constructor(options: ToolboxOptions) {
    this.#options = options;
  }

  /** The tools `allow` lets `channelKey` use, as they are now. */
  forChannel(channelKey: string, allow: readonly string[]): ChannelTools {
    const byName = new Map<string, Tool>();
    for (const tool of [...this.#options.builtIns, ...(this.#options.mcp?.tools() ?? [])]) {
      if (!byName.has(tool.spec.name)) byName.set(tool.spec.name, tool);
    }
    const offer = planToolOffer([...byName.keys()], allow);
    if (offer.leftOut.length > 0) this.#logTrimmed(channelKey, allow, offer);
    const tools = new Map<string, Tool>();
    for (const name of offer.offered) {
      const tool = byName.get(name);
      if (tool) tools.set(name, tool);
    }
    const specs = [...tools.values()].map((tool) => tool.spec);
    return {
      specs,
      call: (call, options) =>
        runToolCall(tools.get(call.name), call, {
          channelKey,
          timeoutMs: options.timeoutMs,
          available: offer.offered,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        }),
    };
  }

  /** Once per allow list and tool set, not per turn: the same channel trims the same way every turn. */
  #logTrimmed(channelKey: string, allow: readonly string[], offer: ToolOffer): void {
    const key = JSON.stringify([allow, offer.offered.length + offer.leftOut.length, offer.leftOut[0]]);
    if (this.#trimsLogged.get(key)) return;
    this.#trimsLogged.set(key, true);
    this.#options.logger?.warn(
      {
        event: 'tools.trimmed',
        channel: channelKey,
        allowed: offer.offered.length + offer.leftOut.length,
        offered: offer.offered.length,
        leftOut: offer.leftOut.length,
        leftOutTools: offer.leftOut.slice(0, MAX_LOGGED_LEFT_OUT),
      },
      `${channelKey} allows ${offer.offered.length + offer.leftOut.length} tools; only ${MAX_TOOLS_PER_CHANNEL} can be offered, so ${offer.leftOut.length} are left out (narrow its [tools] allow)`,
    );
  }
}
