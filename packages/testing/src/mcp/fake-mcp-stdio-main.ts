/**
 * The fake MCP server over stdio, as a process of its own: `node --import tsx fake-mcp-stdio-main.ts
 * '<FakeMcpOptions as JSON>'` (Node 20 cannot run `.ts` itself). `crash` exits with code 3 before it
 * answers. See `fakeMcpStdioCommand` for the command line.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createFakeMcpServer, type FakeMcpOptions } from './fake-mcp-tools.js';

const options = JSON.parse(process.argv[2] ?? '{}') as FakeMcpOptions;
const server = createFakeMcpServer(options, () => process.exit(3));
await server.connect(new StdioServerTransport());
