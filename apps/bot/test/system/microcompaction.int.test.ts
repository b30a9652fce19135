/**
 * Microcompaction end to end on the web channel: the bot's tool loop calls the fake MCP server's
 * `build_log` (started by Ebb over stdio) turn after turn, the real monitor stubs the oldest result
 * once usage passes `microcompact_threshold`, Postgres keeps the whole log beside the stub, and the
 * next prompt the fake OpenAI server receives carries the stub, still answering its call.
 *
 * A third channel runs it with read_history left out of its tools: its stub only says what was there.
 *
 * The numbers (o200k_base): one result is 14,003 tokens. The window is 80,000 with 1,000 for the
 * reply, so a usage point is 790 tokens and a result 17.7 points. Four tool turns:
 *
 * | after turn | results in the context | usage | what happens                                   |
 * | ---------- | ---------------------- | ----- | ---------------------------------------------- |
 * | 3          | 3 whole                | ~0.55 | nothing: below 0.60, and all are the newest 3  |
 * | 4          | 4 whole → 1 stub       | ~0.73 | #3 is stubbed (older than the newest 3) → ~0.55 |
 *
 * `message_max_tokens = 16000` keeps a result whole in the context (no clipping: the stub must be
 * the only thing that shrinks it). The pass tiers sit higher than Ebb's defaults (background 0.90,
 * emergency 0.96, so the early-start floor is 0.78) so that no pass starts during the four turns:
 * with the defaults the floor is 0.50 and a pass starting early at a full-speed pace would race the
 * stub for the same messages. No turn comes near 0.96, so no emergency truncation either.
 */
import { parseConfig } from '@ebb/config';
import type { FreshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { buildLog, fakeMcpStdioCommand } from '@ebb/testing/mcp';
import type { FakeOpenAiServer, RecordedRequest } from '@ebb/testing/openai';
import { sql } from 'drizzle-orm';
import { describe, expect, vi } from 'vitest';
import { ebbWorld, type WebClient } from '../ebb-world.js';
import { emergencyTruncations } from '../expect-runs.js';
import { mcpServersReady } from '../mcp-ready.js';
import { FULL_SPEED_WEB, isPassRequest, jsonLinesLogger } from '../small-window.js';

const WINDOW = 80_000;
const TURNS = 4;
const LOG = buildLog(400);

const tokenizer = await loadTokenizer('o200k_base');
const log = jsonLinesLogger();

function configText(baseUrl: string): string {
  const { command, args } = fakeMcpStdioCommand({ tools: ['build_log'] });
  return [
    '[llm]',
    `context_window = ${WINDOW}`,
    'max_output_tokens = 1000',
    `base_url = "${baseUrl}"`,
    '[compaction]',
    // The scenario is set at the window's edge (its thresholds), not at a working size.
    'working_tokens = 0',
    'message_max_tokens = 16000',
    'background_threshold = 0.9',
    'aggressive_threshold = 0.93',
    'emergency_threshold = 0.96',
    'cooldown_seconds = 0',
    // Stated although they are the defaults: the table above is computed from them.
    'microcompaction = true',
    'microcompact_threshold = 0.6',
    'keep_tool_results = 3',
    'microcompact_min_tokens = 200',
    ...FULL_SPEED_WEB,
    '[web.bot]',
    'respond_to = "all"',
    '[web.tools]',
    'allow = ["ci.build_log", "read_history", "search_history"]',
    // The same scenario with the first tier off: nothing may be stubbed there.
    '[channels."web:off".compaction]',
    'microcompaction = false',
    // The same scenario where the model may not call read_history: the stub must not point at it.
    '[channels."web:noread".tools]',
    'allow = ["ci.build_log"]',
    '[mcp.servers.ci]',
    `command = ${JSON.stringify(command)}`,
    `args = ${JSON.stringify(args)}`,
  ].join('\n');
}

/** A model that answers a question with a call to `build_log`, and the log it then reads with words. */
function script(server: FakeOpenAiServer): void {
  server.reply((request) => {
    if (isPassRequest(request)) throw new Error('no pass may start in this scenario');
    const last = request.body.messages.at(-1);
    if (last?.role === 'tool') return { content: `build read (${String(last.content).length} chars)` };
    return { toolCalls: [{ name: 'ci__build_log', arguments: {} }] };
  });
}

/** The context's usage as `/context` reports it (a share, e.g. 0.725). */
async function usage(web: WebClient, channel: string): Promise<number> {
  const report = await web.command(channel, 'context');
  const percent = /▏ (\d+\.\d)%/.exec(report)?.[1];
  if (percent === undefined) throw new Error(`no usage in /context: ${report}`);
  return Number(percent) / 100;
}

interface ToolRow {
  seq: number;
  content: string;
  context_content: string | null;
  stubbed: boolean;
  tokens: number;
  tool_call_id: string;
}

async function toolRows(fresh: FreshSchemaDb, channel: string): Promise<ToolRow[]> {
  const result = await fresh.db.execute(
    sql`select seq, content, context_content, stubbed, tokens, tool_call_id from ${sql.identifier(fresh.schema)}.messages where channel_key = ${channel} and role = 'tool' order by seq`,
  );
  return (result as unknown as { rows: ToolRow[] }).rows;
}

/** The chat requests of one channel (its questions name it), oldest first. */
function requestsOf(fake: FakeOpenAiServer, channel: string): RecordedRequest[] {
  return fake.completionRequests.filter((r) =>
    JSON.stringify(r.body.messages).includes(`channel-${channel}:`),
  );
}

/** Each tool message of a prompt with the id of the call the assistant message before it made. */
function toolPairs(request: RecordedRequest | undefined) {
  const messages = request?.body.messages ?? [];
  return messages.flatMap((m, i) => {
    if (m.role !== 'tool') return [];
    const call = messages[i - 1];
    const callIds = call?.role === 'assistant' ? (call.tool_calls ?? []).map((c) => c.id) : [];
    return [{ toolCallId: m.tool_call_id, callIds, content: String(m.content) }];
  });
}

/** Drives the tool turns in `channel`; returns the tool rows after turn `TURNS - 1` and the last. */
async function toolTurns({ fresh, web }: { fresh: FreshSchemaDb; web: WebClient }, channel: string) {
  let beforeLast: ToolRow[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    if (turn === TURNS) beforeLast = await toolRows(fresh, `web:${channel}`);
    expect(await web.post(channel, `channel-${channel}: how did build ${turn} go?`)).toBe(
      `build read (${LOG.length} chars)`,
    );
  }
  return { beforeLast, after: await toolRows(fresh, `web:${channel}`) };
}

const it = ebbWorld({
  // Counts with the real tokenizer and refuses a prompt past the window, as a provider would.
  fake: { contextWindow: WINDOW, countTokens: (t) => tokenizer.count(t) },
  script,
  config: (url) => parseConfig(configText(url), 'microcompaction.toml'),
  env: { LOG_LEVEL: 'info' },
  start: { logger: log.logger },
  ready: (ebb) => mcpServersReady(ebb.web.url, ['ci']),
});

describe('microcompaction end to end on the web channel', () => {
  it('stubs the oldest build log once usage passes 0.60, keeps it whole in the archive, and the next prompt carries the stub under its call', async ({
    fake,
    fresh,
    ebb,
    web,
  }) => {
    const { beforeLast, after } = await toolTurns({ fresh, web }, 'on');

    // Three turns: three whole results, below the threshold, nothing stubbed.
    expect(beforeLast.map((r) => [r.seq, r.stubbed])).toEqual([
      [3, false],
      [7, false],
      [11, false],
    ]);
    // The fourth result made four: the oldest (#3) is stubbed, the newest three are whole.
    expect(after.map((r) => [r.seq, r.stubbed])).toEqual([
      [3, true],
      [7, false],
      [11, false],
      [15, false],
    ]);
    const [old] = after;
    if (!old) throw new Error('no tool rows');
    // The archive keeps the whole log, byte for byte; its tokens are the whole result's.
    expect(old.content).toBe(LOG);
    expect(old.tokens).toBeGreaterThanOrEqual(tokenizer.count(LOG));
    expect(old.tokens).toBeLessThan(tokenizer.count(LOG) + 10);
    const firstLine = LOG.split('\n')[0] ?? '';
    expect(firstLine.length).toBeLessThanOrEqual(80); // shown whole, no ellipsis
    const stub = `[tool result of ci.build_log, ${old.tokens.toLocaleString('en-US')} tokens, archived as #3: ${firstLine}] Call read_history with from_seq 3 and to_seq 3 for the whole result.`;
    expect(old.context_content).toBe(stub);

    // The fourth turn's second request (the one after the monitor ran) carries the stub in #3's
    // tool message, right after the call it answers, and the three newest logs whole.
    const requests = requestsOf(fake, 'on');
    expect(requests).toHaveLength(2 * TURNS);
    const pairs = toolPairs(requests.at(-1));
    expect(pairs.map((p) => p.content)).toEqual([stub, LOG, LOG, LOG]);
    for (const [i, pair] of pairs.entries()) {
      expect(pair.callIds).toEqual([pair.toolCallId]);
      expect(pair.toolCallId).toBe(after[i]?.tool_call_id);
    }
    // The request just before it (turn 4's first) still had the log whole: the stub came in between.
    expect(toolPairs(requests.at(-2)).map((p) => p.content)).toEqual([LOG, LOG, LOG]);

    // The log line, with the usage before and after.
    await vi.waitFor(() => expect(log.events('compaction.microcompacted')).toHaveLength(1));
    const [line] = log.events('compaction.microcompacted');
    expect(line).toMatchObject({ channel: 'web:on', fromSeq: 3, toSeq: 3, messagesCompacted: 1 });
    const budget = WINDOW - 1_000;
    const before = Number(line?.tokensBefore) / budget;
    const afterUsage = Number(line?.tokensAfter) / budget;
    expect(before).toBeGreaterThanOrEqual(0.6);
    expect(before).toBeLessThan(0.78);
    expect(afterUsage).toBeLessThan(0.6);
    expect(Number(line?.tokensBefore) - Number(line?.tokensAfter)).toBeGreaterThan(old.tokens - 100);
    expect(await usage(web, 'on')).toBeCloseTo(afterUsage, 1);

    const metrics = await (await fetch(`${ebb.web.url}/metrics`)).text();
    const stubbed = /^ebb_microcompacted_results_total(?:\{[^}]*\})? (\d+)/m.exec(metrics)?.[1];
    expect(Number(stubbed)).toBeGreaterThanOrEqual(1);
    // Nothing else ran: no emergency truncation, no pass, and no prompt past the window.
    expect(await emergencyTruncations(ebb.web.url)).toBe(0);
    expect(log.events('compaction.emergency')).toEqual([]);
    expect(fake.completionRequests.filter((r) => isPassRequest(r) || r.fault !== undefined)).toEqual([]);
  });

  it('stubs nothing in the same scenario when the channel turns microcompaction off', async ({
    fake,
    fresh,
    ebb,
    web,
  }) => {
    const { after } = await toolTurns({ fresh, web }, 'off');
    // The scenario was reached: four results, usage past the threshold, the oldest older than three.
    expect(after).toHaveLength(TURNS);
    expect(await usage(web, 'off')).toBeGreaterThanOrEqual(0.6);
    expect(after.map((r) => [r.stubbed, r.context_content])).toEqual(Array(TURNS).fill([false, null]));
    const pairs = toolPairs(requestsOf(fake, 'off').at(-1));
    expect(pairs.map((p) => p.content)).toEqual([LOG, LOG, LOG, LOG]);
    expect(log.events('compaction.microcompacted').filter((l) => l.channel === 'web:off')).toEqual([]);
    expect(await emergencyTruncations(ebb.web.url)).toBe(0);
  });

  it('does not point the stub at read_history in a channel whose allow list leaves it out', async ({
    fake,
    fresh,
    web,
  }) => {
    const { after } = await toolTurns({ fresh, web }, 'noread');
    expect(after.map((r) => r.stubbed)).toEqual([true, false, false, false]);
    const firstLine = LOG.split('\n')[0] ?? '';
    const stub = `[tool result of ci.build_log, ${after[0]?.tokens.toLocaleString('en-US')} tokens, archived as #3: ${firstLine}]`;
    expect(after[0]?.context_content).toBe(stub);
    const last = requestsOf(fake, 'noread').at(-1);
    expect((last?.body.tools ?? []).map((t) => (t as { function: { name: string } }).function.name)).toEqual([
      'ci__build_log',
    ]);
    expect(toolPairs(last).map((p) => p.content)).toEqual([stub, LOG, LOG, LOG]);
  });
});
