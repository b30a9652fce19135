export * from './fake-mcp-http.js';
export * from './fake-mcp-stdio-command.js';
export {
  buildLog,
  FAKE_BUILD_FAILURE,
  FAKE_MCP_TOOLS,
  type FakeMcpOptions,
  type FakeMcpToolName,
} from './fake-mcp-tools.js';
export * from './mcp-http-front.js';
