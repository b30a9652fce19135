/**
 * The tools of the fake MCP server, on the SDK's low-level `Server` so each answer is exactly what a
 * real server sends: a text result, an `isError` result, a JSON-RPC error, no answer at all, or a
 * process that dies mid-call. One implementation serves both transports (`fake-mcp-stdio-main.ts`,
 * `fake-mcp-http.ts`).
 *
 * | tool        | answers                                                                      |
 * | ----------- | ---------------------------------------------------------------------------- |
 * | `echo`      | `{ text }` back as the result                                                |
 * | `lookup`    | `{ key }`: the scripted text for it (`FakeMcpOptions.lookup`), else an error |
 * | `build_log` | a build log of about 14,000 tokens (`buildLogLines` lines)                   |
 * | `fail`      | an `isError` result: the build failed                                        |
 * | `throw`     | a JSON-RPC error (the call itself fails, no result)                          |
 * | `hang`      | nothing, until the client cancels the request                                |
 * | `crash`     | the process exits (stdio) or the listener closes (HTTP) before it answers    |
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';

export interface FakeMcpOptions {
  /** The server's name in its `initialize` answer. */
  readonly name?: string;
  /** `lookup`'s answers by key. */
  readonly lookup?: Readonly<Record<string, string>>;
  /** Lines of `build_log`'s result; 400 (the default) are 13,999 tokens in o200k_base, 286 are 10,009. */
  readonly buildLogLines?: number;
  /** Only these tools are listed and callable (default all). */
  readonly tools?: readonly FakeMcpToolName[];
}

export const FAKE_MCP_TOOLS = ['echo', 'lookup', 'build_log', 'fail', 'throw', 'hang', 'crash'] as const;
export type FakeMcpToolName = (typeof FAKE_MCP_TOOLS)[number];

export const FAKE_BUILD_FAILURE = 'build 42 failed: step "deploy" exited with code 1 (permission denied)';

const OBJECT = (properties: Record<string, unknown> = {}, required: string[] = []) => ({
  type: 'object' as const,
  properties,
  ...(required.length > 0 ? { required } : {}),
});

const SPECS: Readonly<
  Record<FakeMcpToolName, { description: string; inputSchema: ReturnType<typeof OBJECT> }>
> = {
  echo: {
    description: 'Returns the given text.',
    inputSchema: OBJECT({ text: { type: 'string' } }, ['text']),
  },
  lookup: {
    description: 'Looks a key up in the directory.',
    inputSchema: OBJECT({ key: { type: 'string' } }, ['key']),
  },
  build_log: { description: 'The log of the latest build.', inputSchema: OBJECT() },
  fail: { description: 'Starts a deploy (it fails).', inputSchema: OBJECT() },
  throw: { description: 'A tool whose server errs.', inputSchema: OBJECT() },
  hang: { description: 'A tool that never answers.', inputSchema: OBJECT() },
  crash: { description: 'A tool that takes its server down.', inputSchema: OBJECT() },
};

/**
 * A fake MCP server with the tools above; `crash` calls `onCrash` (exit the process, close the
 * listener) instead of answering.
 */
export function createFakeMcpServer(options: FakeMcpOptions, onCrash: () => void): Server {
  const enabled: readonly FakeMcpToolName[] = options.tools ?? FAKE_MCP_TOOLS;
  const server = new Server(
    { name: options.name ?? 'fake-mcp', version: '1.0.0' },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: enabled.map((name) => ({ name, ...SPECS[name] })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const name = request.params.name as FakeMcpToolName;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (!enabled.includes(name)) throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
    switch (name) {
      case 'echo':
        return text(String(args.text ?? ''));
      case 'lookup': {
        const found = options.lookup?.[String(args.key)];
        return found === undefined
          ? { ...text(`no entry for ${String(args.key)}`), isError: true }
          : text(found);
      }
      case 'build_log':
        return text(buildLog(options.buildLogLines ?? 400));
      case 'fail':
        return { ...text(FAKE_BUILD_FAILURE), isError: true };
      case 'throw':
        throw new McpError(ErrorCode.InternalError, 'the directory backend is unreachable');
      case 'hang':
        // Answers only once the client gives up (the SDK cancels the request on timeout or abort).
        await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve()));
        return text('too late');
      case 'crash':
        onCrash();
        return new Promise<CallToolResult>(() => {});
    }
  });
  return server;
}

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] };
}

/** A CI log: one line per step, about 35 tokens each. */
export function buildLog(lines: number): string {
  const out: string[] = [];
  for (let i = 1; i <= lines; i++) {
    const ms = (i * 37) % 900;
    out.push(
      `[2026-11-22T10:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}Z] step ${i}/${lines} compile src/module_${i}.ts ok (${ms} ms) cache=${i % 3 ? 'hit' : 'miss'}`,
    );
  }
  return out.join('\n');
}
