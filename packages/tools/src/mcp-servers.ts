/**
 * Every MCP server of `config.toml`, started once per process. Their tools are `Tool`s named
 * `server.tool`; a call never throws (a server that is away, an error it answers, a broken
 * connection are each an `isError` outcome the model reads). Which of them a channel gets is the
 * toolbox's business (`toolbox.ts`).
 *
 * A server's tool descriptions reach every prompt of every channel that allows them, so each is
 * made plain and cut at `MAX_TOOL_DESCRIPTION_CHARS` (`tool-text.ts`).
 */
import type { Logger, Tool, ToolOutcome } from '@ebb/core';
import { mcpToolName } from './allow-patterns.js';
import { isToolsError } from './errors.js';
import {
  type McpBackoff,
  McpServerConnection,
  type McpServerSpec,
  type McpServerState,
  type McpToolInfo,
} from './mcp-server-connection.js';
import { toolDescription } from './tool-text.js';

export interface McpServersOptions {
  readonly servers: readonly McpServerSpec[];
  readonly logger: Logger;
  /** How a crashed or failed server is retried. */
  readonly backoff?: Partial<McpBackoff>;
  /** Bound on one start: spawn or connect, handshake, tool list. */
  readonly startTimeoutMs?: number;
  /** Sent as the client's version in the MCP handshake. */
  readonly clientVersion?: string;
  /** How often a ready HTTP server is pinged, so one that went away is noticed without a call. */
  readonly pingIntervalMs?: number;
}

export const DEFAULT_MCP_OPTIONS = {
  backoff: { initialDelayMs: 1_000, maxDelayMs: 60_000 },
  startTimeoutMs: 20_000,
  clientVersion: '0.1.0',
  pingIntervalMs: 30_000,
} as const satisfies Required<Omit<McpServersOptions, 'servers' | 'logger'>>;

export class McpServers {
  readonly #connections: readonly McpServerConnection[];
  /** Each listing's tools, made once (sorted, descriptions cut) rather than every turn. */
  readonly #toolsOf = new WeakMap<readonly McpToolInfo[], readonly Tool[]>();

  constructor(options: McpServersOptions) {
    const backoff = { ...DEFAULT_MCP_OPTIONS.backoff, ...options.backoff };
    this.#connections = options.servers.map(
      (spec) =>
        new McpServerConnection({
          spec,
          logger: options.logger,
          backoff,
          startTimeoutMs: options.startTimeoutMs ?? DEFAULT_MCP_OPTIONS.startTimeoutMs,
          clientVersion: options.clientVersion ?? DEFAULT_MCP_OPTIONS.clientVersion,
          pingIntervalMs: options.pingIntervalMs ?? DEFAULT_MCP_OPTIONS.pingIntervalMs,
        }),
    );
  }

  /**
   * Starts every server at once; resolves when each has made its first try. Never rejects: a server
   * that failed is retried in the background.
   */
  async start(): Promise<void> {
    await Promise.all(this.#connections.map((c) => c.start()));
  }

  /** Each server's state, by name. */
  states(): Record<string, McpServerState> {
    return Object.fromEntries(this.#connections.map((c) => [c.name, c.state]));
  }

  /**
   * The tools of the servers that are ready now, named `server.tool`: servers in `config.toml`
   * order, each one's tools by name, so the order (and which tools a channel over the limit is
   * left without) does not change with the order a server happens to list them in.
   */
  tools(): Tool[] {
    return this.#connections.flatMap((connection) => {
      const listed = connection.tools;
      let tools = this.#toolsOf.get(listed);
      if (tools === undefined) {
        tools = [...listed].sort(byName).map(
          (info): Tool => ({
            spec: {
              name: mcpToolName(connection.name, info.name),
              description: toolDescription(info.description),
              parameters: info.inputSchema,
            },
            call: (args, context) => callMcp(connection, info.name, args, context.signal),
          }),
        );
        this.#toolsOf.set(listed, tools);
      }
      return tools;
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.#connections.map((c) => c.close()));
  }
}

async function callMcp(
  connection: McpServerConnection,
  tool: string,
  args: unknown,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  try {
    return await connection.call(tool, args as Record<string, unknown>, signal);
  } catch (err) {
    // An abort is the toolbox's to describe (a timeout, or the bot stopping).
    if (signal.aborted) throw err;
    if (isToolsError(err)) return { text: `${capitalized(err.message)}.`, isError: true };
    throw err;
  }
}

function byName(a: { readonly name: string }, b: { readonly name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
