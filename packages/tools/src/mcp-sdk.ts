/**
 * The parts of the MCP SDK a connection uses, loaded when the first MCP server starts: a process
 * with no `[mcp.servers]` (the default) never loads the SDK, which was 0.12 s of every start.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

export interface McpSdk {
  readonly Client: typeof Client;
  readonly StdioClientTransport: typeof StdioClientTransport;
  readonly StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  readonly ErrorCode: typeof ErrorCode;
  readonly McpError: typeof McpError;
}

let loading: Promise<McpSdk> | undefined;

export function mcpSdk(): Promise<McpSdk> {
  loading ??= load();
  return loading;
}

async function load(): Promise<McpSdk> {
  const [client, stdio, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
  };
}
