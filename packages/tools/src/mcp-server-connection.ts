/**
 * One MCP server from `config.toml`, held connected: started once (a process over stdio, or a
 * session over streamable HTTP), its tools listed, its calls made; restarted with exponential
 * backoff when it crashes, disconnects or cannot start. Nothing here ever throws at Ebb's start: a
 * server that cannot start is `failed` (logged `mcp.server_failed`) and tried again later.
 *
 *   starting ──ok──▶ ready ──lost──▶ restarting ──ok──▶ ready
 *      │                                 │
 *      └──error──▶ failed ◀──error───────┘      (failed: waiting for the next try)
 *
 * The backoff doubles from `initialDelayMs` up to `maxDelayMs` and goes back to the start once a try
 * succeeds. Secrets (resolved `env` and `headers`) are handed to the transport and never logged.
 *
 * A stdio server that exits is lost at once; a ready HTTP server is pinged, and lost after
 * `MISSED_PINGS_TO_LOSE` pings in a row went unanswered (a timeout or a transport error). Any answer
 * counts, even a JSON-RPC error: a server that does not implement `ping` is still there. Losing a
 * server cuts its calls in flight, and (ready resets the backoff) one lost per slow ping would be
 * restarted every interval.
 */

import {
  type Backoff,
  backoffDelayMs,
  errorText,
  type Logger,
  type McpServerSpec,
  withTimeout,
} from '@ebb/core';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpError } from '@modelcontextprotocol/sdk/types.js';
import { ToolsError } from './errors.js';
import { type McpCallResult, mcpResultText } from './mcp-result-text.js';
import { type McpSdk, mcpSdk } from './mcp-sdk.js';

export type { McpServerSpec };

export type McpServerStatus = 'starting' | 'ready' | 'restarting' | 'failed';

/** What `/healthz` and `ebb status` show of a server. */
export interface McpServerState {
  readonly status: McpServerStatus;
  readonly transport: 'stdio' | 'http';
  /** Tools it lists (0 unless ready). */
  readonly tools: number;
  /** Tries after the first start: restarts after a loss and retries after a failure. */
  readonly restarts: number;
  /** Why the last try failed or the connection was lost; absent until something went wrong. */
  readonly lastError?: string;
}

/** A tool as the server lists it. */
export interface McpToolInfo {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Readonly<Record<string, unknown>>;
}

/** Restarts back off in core's words (no jitter: one server, nothing to spread). */
export type McpBackoff = Backoff;

export interface McpServerConnectionOptions {
  readonly spec: McpServerSpec;
  readonly logger: Logger;
  readonly backoff: McpBackoff;
  /** Bound on one try: spawning or connecting, the MCP handshake and listing the tools. */
  readonly startTimeoutMs: number;
  readonly clientVersion: string;
  /**
   * How often a ready HTTP server is pinged. A stdio server that exits closes its pipes at once; an
   * HTTP server that went away says nothing until it is asked, so without a ping it would show
   * `ready` (in /healthz, `ebb status` and the tools offered) until a call failed. Each ping waits
   * at most this long (and at most `startTimeoutMs`).
   */
  readonly pingIntervalMs: number;
}

/**
 * The SDK's own bound on a call; the toolbox aborts first (`[tools] call_timeout_seconds`, at most
 * 600 s), so this only keeps the SDK from applying its 60 s default underneath.
 */
const SDK_CALL_TIMEOUT_MS = 700_000;
const MAX_LISTED_PAGES = 20;
/** One slow answer is not a server gone: only this many unanswered pings in a row lose it. */
const MISSED_PINGS_TO_LOSE = 2;

export class McpServerConnection {
  readonly name: string;
  readonly #options: McpServerConnectionOptions;
  readonly #log: Logger;
  #status: McpServerStatus = 'starting';
  #client: Client | undefined;
  #tools: readonly McpToolInfo[] = [];
  #restarts = 0;
  /** Failed tries in a row: the exponent of the backoff. */
  #failures = 0;
  #lastError: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #pinger: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: McpServerConnectionOptions) {
    this.#options = options;
    this.name = options.spec.name;
    this.#log = options.logger.child({ server: options.spec.name });
  }

  /** Makes the first try; resolves once it is ready or has failed (a retry is then scheduled). */
  start(): Promise<void> {
    return this.#attempt();
  }

  get state(): McpServerState {
    return {
      status: this.#status,
      transport: this.#options.spec.transport,
      tools: this.#status === 'ready' ? this.#tools.length : 0,
      restarts: this.#restarts,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
  }

  /** The tools it listed when it last became ready; none while it is not ready. */
  get tools(): readonly McpToolInfo[] {
    return this.#status === 'ready' ? this.#tools : [];
  }

  /**
   * Calls one of its tools. Throws `ToolsError` when the server is not ready, answers with a
   * JSON-RPC error, or the connection breaks (which also starts a restart); an abort of `signal`
   * rejects with the signal's reason.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<{ text: string; isError: boolean }> {
    const client = this.#client;
    if (client === undefined || this.#status !== 'ready') {
      const why = this.#lastError === undefined ? '' : ` (${this.#lastError})`;
      throw new ToolsError(
        `the MCP server ${this.name} is ${this.#status}${why}; its tools cannot be used right now`,
        {
          code: 'tool_server_unavailable',
          retryable: true,
        },
      );
    }
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: SDK_CALL_TIMEOUT_MS,
      });
      return { text: mcpResultText(result as McpCallResult), isError: result.isError === true };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      // Loaded already: the client that failed came from it.
      if (isServerAnswer(err, await mcpSdk())) {
        throw new ToolsError(`the MCP server ${this.name} answered with an error: ${err.message}`, {
          code: 'tool_server_error',
          cause: err,
        });
      }
      // The connection broke (a stdio server's exit has already started the restart).
      this.#lost(client, errorText(err));
      throw new ToolsError(
        `the connection to the MCP server ${this.name} broke during the call: ${errorText(err)}`,
        {
          code: 'tool_transport',
          retryable: true,
          cause: err,
        },
      );
    }
  }

  /** Stops retrying and disconnects (a stdio server's process is ended). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearInterval(this.#pinger);
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => {});
  }

  async #attempt(): Promise<void> {
    const { spec, startTimeoutMs, clientVersion } = this.#options;
    const sdk = await mcpSdk();
    const client = new sdk.Client({ name: 'ebb', version: clientVersion }, { capabilities: {} });
    try {
      if (spec.missingEnv.length > 0) {
        const names = spec.missingEnv.join(', ');
        throw new ToolsError(
          `environment variable${spec.missingEnv.length === 1 ? '' : 's'} ${names} not set`,
          {
            code: 'tool_start_failed',
          },
        );
      }
      const transport = this.#transport(sdk);
      client.onclose = () => this.#lost(client, 'the connection closed');
      const tools = await withTimeout(async () => {
        await client.connect(transport);
        return listTools(client);
      }, startTimeoutMs);
      if (this.#closed) {
        await client.close();
        return;
      }
      this.#client = client;
      this.#tools = tools;
      this.#status = 'ready';
      this.#failures = 0;
      if (spec.transport === 'http') this.#keepPinging(client);
      this.#log.info(
        {
          event: 'mcp.server_ready',
          transport: spec.transport,
          tools: tools.length,
          restarts: this.#restarts,
        },
        `MCP server ${this.name} is ready with ${tools.length} tools`,
      );
    } catch (err) {
      // Its close below is ours, not a loss.
      client.onclose = () => {};
      await client.close().catch(() => {});
      if (this.#closed) return;
      this.#status = 'failed';
      this.#lastError = errorText(err);
      const retryInMs = this.#schedule();
      this.#log.warn(
        {
          event: 'mcp.server_failed',
          transport: spec.transport,
          error: this.#lastError,
          retryInMs,
          restarts: this.#restarts,
        },
        `MCP server ${this.name} could not start (${this.#lastError}); trying again in ${Math.round(retryInMs / 1000)} s`,
      );
    }
  }

  #lost(client: Client, reason: string): void {
    if (client !== this.#client || this.#closed) return;
    clearInterval(this.#pinger);
    this.#client = undefined;
    this.#status = 'restarting';
    this.#lastError = reason;
    void client.close().catch(() => {});
    const retryInMs = this.#schedule();
    this.#log.warn(
      { event: 'mcp.server_lost', transport: this.#options.spec.transport, error: reason, retryInMs },
      `MCP server ${this.name} went away (${reason}); restarting in ${Math.round(retryInMs / 1000)} s`,
    );
  }

  /**
   * Pings `client` every `pingIntervalMs` while it is the connection's; `MISSED_PINGS_TO_LOSE`
   * unanswered in a row lose it, and any answer starts the count again.
   */
  #keepPinging(client: Client): void {
    const { pingIntervalMs, startTimeoutMs } = this.#options;
    let pinging = false;
    let missed = 0;
    clearInterval(this.#pinger);
    this.#pinger = setInterval(() => {
      if (pinging) return;
      pinging = true;
      void ping(client, Math.min(startTimeoutMs, pingIntervalMs))
        .then((outcome) => {
          switch (outcome.kind) {
            case 'answered':
              missed = 0;
              return;
            case 'missed':
              missed++;
              if (missed >= MISSED_PINGS_TO_LOSE) {
                this.#lost(client, `it did not answer ${missed} pings in a row (${outcome.why})`);
              } else if (client === this.#client && !this.#closed) {
                this.#log.warn(
                  { event: 'mcp.ping_missed', error: outcome.why, missed },
                  `MCP server ${this.name} did not answer a ping (${outcome.why}); it is restarted if it misses the next one too`,
                );
              }
          }
        })
        .finally(() => {
          pinging = false;
        });
    }, pingIntervalMs);
    this.#pinger.unref();
  }

  /** The next try after the backoff; the delay. */
  #schedule(): number {
    this.#failures++;
    const delay = backoffDelayMs(this.#options.backoff, this.#failures);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#restarts++;
      this.#status = 'restarting';
      void this.#attempt();
    }, delay);
    this.#timer.unref();
    return delay;
  }

  #transport(sdk: McpSdk): Transport {
    const spec = this.#options.spec;
    switch (spec.transport) {
      case 'stdio': {
        const transport = new sdk.StdioClientTransport({
          command: spec.command,
          args: [...spec.args],
          env: { ...spec.env },
          stderr: 'pipe',
        });
        // A server's stderr is its own log: kept at debug (it may say what a secret was for).
        transport.stderr?.on('data', (chunk: Buffer) => {
          for (const line of chunk.toString().split('\n')) {
            if (line.trim() !== '')
              this.#log.debug({ event: 'mcp.server_stderr', line }, 'MCP server stderr');
          }
        });
        return transport;
      }
      case 'http':
        return new sdk.StreamableHTTPClientTransport(new URL(spec.url), {
          requestInit: { headers: { ...spec.headers } },
        });
    }
  }
}

type PingOutcome = { readonly kind: 'answered' } | { readonly kind: 'missed'; readonly why: string };

async function ping(client: Client, timeoutMs: number): Promise<PingOutcome> {
  try {
    await client.ping({ timeout: timeoutMs });
    return { kind: 'answered' };
  } catch (err) {
    return isServerAnswer(err, await mcpSdk())
      ? { kind: 'answered' }
      : { kind: 'missed', why: errorText(err) };
  }
}

/**
 * Whether `err` is the server's own JSON-RPC error answer, rather than the SDK giving up on one (a
 * timeout, a closed connection) or the transport failing (a refused or cut HTTP request).
 */
function isServerAnswer(err: unknown, { ErrorCode, McpError }: McpSdk): err is McpError {
  return (
    err instanceof McpError &&
    err.code !== ErrorCode.ConnectionClosed &&
    err.code !== ErrorCode.RequestTimeout
  );
}

async function listTools(client: Client): Promise<McpToolInfo[]> {
  const tools: McpToolInfo[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LISTED_PAGES; page++) {
    const listed = await client.listTools(cursor === undefined ? {} : { cursor });
    for (const tool of listed.tools) {
      tools.push({
        name: tool.name,
        description: tool.description ?? '',
        inputSchema: tool.inputSchema as Record<string, unknown>,
      });
    }
    cursor = listed.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}
