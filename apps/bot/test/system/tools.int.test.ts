/**
 * Tools end to end through the web channel: the real HTTP API, the bot's tool loop, Postgres, and
 * the real clients against fakes on both sides: the openai client against the fake OpenAI server
 * (which answers with tool calls) and the MCP SDK client against the fake MCP server, started by
 * Ebb over stdio from `[mcp.servers]` like any operator's server.
 */
import { parseConfig } from '@ebb/config';
import { PgChannelStore } from '@ebb/db';
import { FAKE_BUILD_FAILURE, fakeMcpStdioCommand } from '@ebb/testing/mcp';
import type { FakeReplySource, RecordedRequest } from '@ebb/testing/openai';
import { sql } from 'drizzle-orm';
import { describe, expect, vi } from 'vitest';
import { ebbWorld } from '../ebb-world.js';
import { mcpServersReady } from '../mcp-ready.js';
import { FULL_SPEED_WEB } from '../small-window.js';

function server(name: string, options: Parameters<typeof fakeMcpStdioCommand>[0]): string[] {
  const { command, args } = fakeMcpStdioCommand(options);
  return [`[mcp.servers.${name}]`, `command = ${JSON.stringify(command)}`, `args = ${JSON.stringify(args)}`];
}

const CONFIG = [
  '[llm]',
  'base_url = "BASE_URL"',
  ...FULL_SPEED_WEB,
  '[web.bot]',
  'respond_to = "all"',
  '[web.tools]',
  'allow = ["dir.*", "ci.*", "search_history"]',
  '[channels."web:slow".tools]',
  'allow = ["dir.*"]',
  'call_timeout_seconds = 0.5',
  '[channels."web:loop".tools]',
  'allow = ["dir.*"]',
  'max_steps = 3',
  ...server('dir', { tools: ['lookup', 'fail', 'hang'], lookup: { ana: 'Ana runs the deploys' } }),
  ...server('ci', { tools: ['echo', 'crash'] }),
];

async function health(url: string): Promise<{
  mcp: Record<string, { status: string; restarts: number; tools: number }>;
}> {
  return (await (await fetch(`${url}/healthz`)).json()) as never;
}

/** The text of the request's last message, when it is a tool result. */
function lastToolResult(request: RecordedRequest): string {
  const last = request.body.messages.at(-1);
  return last?.role === 'tool' && typeof last.content === 'string' ? last.content : '(no tool result)';
}

/** One tool call, then an answer that quotes the result the model was given. */
function callThenAnswer(name: string, args: Readonly<Record<string, unknown>> = {}): FakeReplySource[] {
  return [
    { toolCalls: [{ name, arguments: args }] },
    (request) => ({ content: `Found: ${lastToolResult(request)}` }),
  ];
}

function toolNames(request: RecordedRequest | undefined): string[] {
  return (request?.body.tools ?? []).map((t) => (t as { function: { name: string } }).function.name);
}

const it = ebbWorld({
  config: (url) => parseConfig(CONFIG.join('\n').replace('BASE_URL', url), 'tools.toml'),
  start: { mcpBackoff: { initialDelayMs: 200, maxDelayMs: 1_000 } },
  ready: (ebb) => mcpServersReady(ebb.web.url, ['dir', 'ci']),
});

describe('tools end to end on the web channel', () => {
  it('offers the allowed tools, archives the call and its result as a pair, and posts only the answer', async ({
    fake,
    fresh,
    web,
  }) => {
    fake.reset();
    fake.enqueue(...callThenAnswer('dir__lookup', { key: 'ana' }));
    expect(await web.post('a', 'who runs the deploys?')).toBe('Found: Ana runs the deploys');

    const [first, second] = fake.completionRequests;
    // Built-ins first, then the servers in config order, each one's tools by name.
    expect(toolNames(first)).toEqual([
      'search_history',
      'dir__fail',
      'dir__hang',
      'dir__lookup',
      'ci__crash',
      'ci__echo',
    ]);
    expect(second?.body.messages.slice(-2)).toMatchObject([
      {
        role: 'assistant',
        tool_calls: [{ type: 'function', function: { name: 'dir__lookup', arguments: '{"key":"ana"}' } }],
      },
      { role: 'tool', content: 'Ana runs the deploys' },
    ]);

    // In Postgres: the question, the call, its result under the call's id, then the answer; only the
    // question and the answer have platform ids (they were posted), the call and result none.
    const rows = await fresh.db.execute(
      sql`select seq, role, author, content, tool_calls, tool_call_id, platform_message_id from ${sql.identifier(fresh.schema)}.messages where channel_key = 'web:a' order by seq`,
    );
    const archived = (rows as unknown as { rows: Record<string, unknown>[] }).rows;
    const callId = (archived[1]?.tool_calls as { id: string }[] | null)?.[0]?.id;
    expect(callId).toMatch(/^call_/);
    expect(archived).toMatchObject([
      { seq: 1, role: 'user', content: 'who runs the deploys?', tool_calls: null, tool_call_id: null },
      {
        seq: 2,
        role: 'assistant',
        author: 'ebb',
        tool_calls: [{ id: callId, name: 'dir.lookup', arguments: '{"key":"ana"}' }],
        platform_message_id: null,
      },
      {
        seq: 3,
        role: 'tool',
        author: 'dir.lookup',
        content: 'Ana runs the deploys',
        tool_call_id: callId,
        platform_message_id: null,
      },
      { seq: 4, role: 'assistant', content: 'Found: Ana runs the deploys', tool_calls: null },
    ]);
    expect(archived[0]?.platform_message_id).not.toBeNull();
    expect(archived[3]?.platform_message_id).not.toBeNull();

    // The next turn's prompt carries the pair from the working context, in order.
    fake.enqueue({ content: 'ok' });
    await web.post('a', 'thanks');
    expect(
      fake.completionRequests
        .at(-1)
        ?.body.messages.slice(-4)
        .map((m) => m.role),
    ).toEqual(['assistant', 'tool', 'assistant', 'user']);
  });

  it('gives the model a failing tool’s error as its result, and the turn still answers', async ({
    fake,
    ebb,
    web,
  }) => {
    fake.reset();
    fake.enqueue(...callThenAnswer('dir__fail'));
    expect(await web.post('b', 'deploy please')).toBe(`Found: ${FAKE_BUILD_FAILURE}`);
    const metrics = await (await fetch(`${ebb.web.url}/metrics`)).text();
    expect(metrics).toMatch(/ebb_tool_calls_total\{tool="dir.fail",outcome="error"\} 1/);
  });

  it('cancels a tool that hangs at the channel’s timeout and the turn answers', async ({ fake, web }) => {
    fake.reset();
    fake.enqueue(...callThenAnswer('dir__hang'));
    const reply = await web.post('slow', 'check the slow thing');
    expect(reply).toBe(
      'Found: The tool dir.hang did not answer within 0.5 s and was cancelled. Go on without its result, or try once more later.',
    );
    // The channel's allow list is its own: only dir's tools are offered in web:slow.
    expect(toolNames(fake.completionRequests[0])).toEqual(['dir__fail', 'dir__hang', 'dir__lookup']);
  });

  it('stops offering tools at the step limit and posts the words of the last call', async ({
    fake,
    fresh,
    web,
  }) => {
    fake.reset();
    // A model that would call tools forever while it is offered any.
    fake.reply((request) =>
      toolNames(request).length > 0
        ? { toolCalls: [{ name: 'dir__lookup', arguments: { key: 'ana' } }] }
        : { content: 'Enough looking: Ana runs the deploys.' },
    );
    expect(await web.post('loop', 'who runs the deploys? check twice')).toBe(
      'Enough looking: Ana runs the deploys.',
    );
    const requests = fake.completionRequests;
    expect(requests.map((r) => toolNames(r).length > 0)).toEqual([true, true, false]);
    const archive = await new PgChannelStore({ db: fresh.db }).readArchive('web:loop', 1, 100);
    expect(archive.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    fake.reply({ content: 'unused' });
  });

  it('restarts a server that crashed, shows it in /healthz, and its tools work again', async ({
    fake,
    ebb,
    web,
  }) => {
    fake.reset();
    fake.enqueue(...callThenAnswer('ci__crash'));
    const reply = await web.post('c', 'crash the ci server');
    expect(reply).toMatch(/^Found: The connection to the MCP server ci broke during the call/);
    // /healthz is public: the state, tools and restarts, never why it was lost (that is in the log).
    await vi.waitFor(
      async () =>
        expect((await health(ebb.web.url)).mcp.ci).toEqual({ status: 'ready', restarts: 1, tools: 2 }),
      { timeout: 15_000, interval: 50 },
    );
    fake.enqueue(...callThenAnswer('ci__echo', { text: 'back again' }));
    expect(await web.post('c', 'are you back?')).toBe('Found: back again');
  });
});
