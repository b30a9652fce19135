/**
 * @ebb/tools: the tools the chat model may call. `McpServers` keeps the MCP servers of
 * `config.toml` connected (restarting them with backoff) and offers their tools as `server.tool`;
 * `Toolbox` gives a channel the built-in and MCP tools its `[tools] allow` patterns let it use, and
 * runs each call so that every failure is an `isError` outcome, never a thrown error.
 */
export { isToolAllowed, mcpToolName, patternMatchesTool, patternServer } from './allow-patterns.js';
export { isToolsError, TOOLS_ERROR_CODES, ToolsError, type ToolsErrorCode } from './errors.js';
export { mcpResultText } from './mcp-result-text.js';
export type {
  McpBackoff,
  McpServerSpec,
  McpServerState,
  McpServerStatus,
  McpToolInfo,
} from './mcp-server-connection.js';
export { DEFAULT_MCP_OPTIONS, McpServers, type McpServersOptions } from './mcp-servers.js';
export { runToolCall, type ToolCallReport, type ToolCallStatus } from './run-tool-call.js';
export { MAX_TOOLS_PER_CHANNEL, planToolOffer, type ToolOffer } from './tool-offer.js';
export {
  boundedToolText,
  loggedToolText,
  MAX_LOGGED_TOOL_CHARS,
  MAX_TOOL_DESCRIPTION_CHARS,
  MAX_TOOL_RESULT_CHARS,
  toolDescription,
} from './tool-text.js';
export { type ChannelTools, type ChannelToolsCallOptions, Toolbox, type ToolboxOptions } from './toolbox.js';
