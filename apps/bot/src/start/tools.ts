/**
 * The tools part: the MCP servers and the built-in history tools in one toolbox (toolbox.ts),
 * the servers stopped at stop.
 */

import type { ShutdownSteps } from '@ebb/core';
import type { Database } from '@ebb/db';
import type { McpServers, Toolbox } from '@ebb/tools';
import type { StartOptions } from './options.js';
import { startTools } from './toolbox.js';

export async function startToolbox(
  options: StartOptions,
  database: Database,
  steps: ShutdownSteps,
): Promise<{ mcp: McpServers; toolbox: Toolbox }> {
  // The built-in history tools and the MCP servers', per channel as [tools] allow says.
  const tools = await startTools({
    config: options.config,
    database,
    logger: options.logger,
    ...(options.mcpBackoff === undefined ? {} : { mcpBackoff: options.mcpBackoff }),
  });
  steps.add(() => tools.mcp.close());
  return tools;
}
