/**
 * Stopping Ebb while a turn waits on a tool: the call is cancelled instead of holding the shutdown
 * for its whole timeout (here 120 s, against vitest's 30 s for the test), its result says the bot is
 * stopping and is archived with the call, the model is asked once more with no tools, and its words
 * are the reply the waiting HTTP request gets. Real clients throughout: the MCP SDK against the fake
 * MCP server over streamable HTTP, the openai client against the fake OpenAI server.
 *
 * Ebb is stopped only once the fake MCP server holds the call: the fake OpenAI server records the
 * model's request before it answers, so a stop right after that could come before the call was
 * made, and a call cancelled before it started would read the same. `hang` answers only when its
 * request is cancelled, so a call the fake has taken is in flight until Ebb stops.
 */
import { loadEnv, parseConfig } from '@ebb/config';
import { freshSchemaDb } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeMcpHttpServer, McpHttpFront } from '@ebb/testing/mcp';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { mcpServersReady } from '../mcp-ready.js';
import { FULL_SPEED_WEB, jsonLinesLogger } from '../small-window.js';

let fake: FakeOpenAiServer;
let mcp: FakeMcpHttpServer;
let front: McpHttpFront;
/** The tools the fake MCP server has taken a call for (it holds `hang` until the call is cancelled). */
const taken: string[] = [];
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let ebb: RunningEbb | undefined;
const prefix = randomPrefix();
const log = jsonLinesLogger();

const CANCELLED = 'The call to dir.hang was cancelled because the bot is stopping.';

function configText(baseUrl: string, mcpUrl: string): string {
  return [
    '[llm]',
    `base_url = "${baseUrl}"`,
    ...FULL_SPEED_WEB,
    '[web.bot]',
    'respond_to = "all"',
    '[web.tools]',
    'allow = ["dir.hang"]',
    'call_timeout_seconds = 120',
    '[shutdown]',
    'grace_seconds = 25',
    '[mcp.servers.dir]',
    `url = "${mcpUrl}"`,
  ].join('\n');
}

function lastToolResult(request: RecordedRequest): string {
  const last = request.body.messages.at(-1);
  return last?.role === 'tool' && typeof last.content === 'string' ? last.content : '(no tool result)';
}

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  mcp = await FakeMcpHttpServer.start({ tools: ['hang'] });
  front = await McpHttpFront.start(mcp.url, {
    onForwarded: (message) => {
      if (message.method === 'tools/call') taken.push(String(message.params?.name));
    },
  });
  const mcpUrl = front.url;
  fresh = await freshSchemaDb();
  const config = parseConfig(configText(fake.url, mcpUrl), 'tools-shutdown.toml');
  ebb = await startEbb({
    config: () => config,
    env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix, LOG_LEVEL: 'info' }),
    logger: log.logger,
    withWorker: true,
    webPort: 0,
    database: fresh.database,
    llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
    processMetrics: false,
  });
  const url = ebb.web.url;
  await mcpServersReady(url, ['dir']);
}, 60_000);

afterAll(async () => {
  await ebb?.close();
  await dropPrefix(prefix);
  await fresh?.close();
  await fake?.close();
  await front?.close();
  await mcp?.close();
});

describe('stopping Ebb during a tool call', () => {
  it('cancels the call, archives it with its result, and the turn answers in words before Ebb stops', async () => {
    const running = ebb;
    if (!running) throw new Error('Ebb did not start');
    fake.enqueue({ toolCalls: [{ name: 'dir__hang', arguments: {} }] }, (request) => ({
      content: `Stopped early: ${lastToolResult(request)}`,
    }));
    const answered = fetch(`${running.web.url}/api/channels/stop/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'q1', author: 'ana', text: 'check the slow thing' }),
    });
    // The fake MCP server holds the call: the turn waits on the tool.
    await vi.waitFor(() => expect(taken).toEqual(['hang']), { timeout: 10_000 });

    const closing = running.close();
    ebb = undefined;
    const response = await answered;
    expect(response.status).toBe(200);
    expect(((await response.json()) as { reply: string }).reply).toBe(`Stopped early: ${CANCELLED}`);
    await closing;

    // The second model call offered no tools, so the model could only answer.
    expect(fake.completionRequests).toHaveLength(2);
    expect(fake.completionRequests[1]?.body.tools ?? []).toEqual([]);
    // The question, the call, its cancelled result under the call's id, the answer.
    const rows = await fresh.db.execute(
      sql`select role, content, tool_call_id from ${sql.identifier(fresh.schema)}.messages where channel_key = 'web:stop' order by seq`,
    );
    const archived = (rows as unknown as { rows: { role: string; content: string }[] }).rows;
    expect(archived.map((r) => [r.role, r.content])).toEqual([
      ['user', 'check the slow thing'],
      ['assistant', ''],
      ['tool', CANCELLED],
      ['assistant', `Stopped early: ${CANCELLED}`],
    ]);
    expect(log.events('tool.called')).toMatchObject([
      { tool: 'dir.hang', status: 'cancelled', isError: true },
    ]);
  });
});
