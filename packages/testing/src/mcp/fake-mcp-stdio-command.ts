/**
 * How a test configures the fake MCP server over stdio in `config.toml`:
 *
 *   const { command, args } = fakeMcpStdioCommand({ lookup: { ana: 'Ana runs the deploys' } });
 *   `[mcp.servers.dir]\ncommand = ${JSON.stringify(command)}\nargs = ${JSON.stringify(args)}`
 */
import { fileURLToPath } from 'node:url';
import type { FakeMcpOptions } from './fake-mcp-tools.js';

const MAIN = fileURLToPath(new URL('./fake-mcp-stdio-main.ts', import.meta.url));

export function fakeMcpStdioCommand(options: FakeMcpOptions = {}): {
  readonly command: string;
  readonly args: readonly string[];
} {
  return { command: process.execPath, args: ['--import', 'tsx', MAIN, JSON.stringify(options)] };
}
