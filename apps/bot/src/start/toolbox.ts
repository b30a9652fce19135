/**
 * The tools of a running Ebb: the MCP servers of `config.toml` (started once per process; a change
 * to `[mcp.servers]` takes a restart, a change to `[tools] allow` applies at the next turn) and the
 * built-in history tools over the archive, in one `Toolbox` the bot asks per channel.
 */
import { type EbbConfig, mcpServerSpecs, resolveChannel } from '@ebb/config';
import { historyResultTokens, historyTools, settleWithin } from '@ebb/core';
import type { Database } from '@ebb/db';
import { loadTokenizer } from '@ebb/llm';
import type { Logger } from '@ebb/logger';
import { type McpBackoff, McpServers, Toolbox } from '@ebb/tools';

/**
 * How long the start waits for the MCP servers' first try, so the first turns have their tools; a
 * slower or failing server comes up in the background (`mcp.server_failed`, retried).
 */
const MCP_START_WAIT_MS = 5_000;

export interface StartToolsOptions {
  readonly config: () => EbbConfig;
  /** Only its archive search: the history tools read the archive through it. */
  readonly database: Pick<Database, 'archiveSearch'>;
  readonly logger: Logger;
  readonly mcpBackoff?: Partial<McpBackoff>;
}

export async function startTools(options: StartToolsOptions): Promise<{ mcp: McpServers; toolbox: Toolbox }> {
  const { config } = options;
  const mcp = new McpServers({
    servers: mcpServerSpecs(config()),
    logger: options.logger,
    ...(options.mcpBackoff === undefined ? {} : { backoff: options.mcpBackoff }),
  });
  await settleWithin(mcp.start(), MCP_START_WAIT_MS);
  const toolbox = new Toolbox({
    builtIns: historyTools(options.database.archiveSearch, {
      tokenizerFor: (key) => loadTokenizer(resolveChannel(config(), key).llm.encoding),
      // The calling channel's own cap (hot-reloaded), so its context never clips a result.
      maxResultTokens: (key) =>
        historyResultTokens(resolveChannel(config(), key).compaction.messageMaxTokens),
    }),
    mcp,
    logger: options.logger,
  });
  return { mcp, toolbox };
}
