/**
 * Errors of the tools package. They never reach a turn: the toolbox turns every failure of a call
 * into a `ToolOutcome` with `isError` (see `run-tool-call.ts`); these codes name the failure in the
 * `tool.called` log line and in `McpServers`' states. A call past `[tools] call_timeout_seconds` is
 * no error of these: `runToolCall` aborts it and reports the status `timeout`.
 *
 * | code                      | when                                                                  | retryable |
 * | ------------------------- | --------------------------------------------------------------------- | --------- |
 * | `tool_server_unavailable` | the tool's MCP server is starting, restarting or failed               | yes       |
 * | `tool_server_error`       | the server answered the call with a JSON-RPC error                    | no        |
 * | `tool_transport`          | the connection broke during the call (the server is restarted)        | yes       |
 * | `tool_start_failed`       | a server could not be started or initialized                          | yes       |
 */
import { EbbError } from '@ebb/core';

export const TOOLS_ERROR_CODES = [
  'tool_server_unavailable',
  'tool_server_error',
  'tool_transport',
  'tool_start_failed',
] as const;
export type ToolsErrorCode = (typeof TOOLS_ERROR_CODES)[number];

export class ToolsError extends EbbError<ToolsErrorCode> {}

export function isToolsError(err: unknown, code?: ToolsErrorCode): err is ToolsError {
  return err instanceof ToolsError && (code === undefined || err.code === code);
}
