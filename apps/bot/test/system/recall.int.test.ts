/**
 * Recall after compaction, end to end on the web channel: a fact said once is summarized away by a
 * real pass (the fake OpenAI server's summary leaves it out), so the model cannot see it; asked
 * about it, the model calls the built-in `search_history`, Ebb runs it against Postgres, and the
 * next request to the fake carries the exact archived words with their `#seq` and author. Another
 * channel's similar fact is never found, and `read_history` of the fact's seq gives the words back.
 *
 * The window is `smallWindowConfig`'s 4,000 tokens: posted at full speed, the first pass starts after
 * about 30 short turns and summarizes #1–#59 (the fact is #3).
 */
import { PgChannelStore } from '@ebb/db';
import type { FreshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import type { FakeOpenAiServer, FakeReply, RecordedRequest } from '@ebb/testing/openai';
import { sql } from 'drizzle-orm';
import { describe, expect, vi } from 'vitest';
import { ebbWorld, type WebClient } from '../ebb-world.js';
import { isPassRequest, jsonLinesLogger, passReply, smallWindowConfig } from '../small-window.js';

const FACT = 'The staging database password rotation is on the 3rd Thursday, ticket OPS-4821.';
/** Another channel's fact, worded alike: a search in the first channel must not find it. */
const OTHER_FACT = 'The staging database password rotation is on the 2nd Monday, ticket OPS-9917.';
const SEARCH_QUESTION = 'When is the staging database password rotation again?';
const OTHER_QUESTION = 'Which day is our staging password rotation?';
const READ_QUESTION = 'Quote that message word for word, please.';
/** What every pass summarizes the channel to: nothing of the fact. */
const SUMMARY = 'Earlier: routine status notes about builds and reviews.';
/** Enough turns for the first pass, with room to spare (it starts after about 30). */
const MAX_FILLERS = 200;

const tokenizer = await loadTokenizer('o200k_base');
const log = jsonLinesLogger();
/** The tool call the fake answers a question with (a question's text → the call). */
const calls = new Map<string, FakeReply>();

/**
 * Passes get the summary; a question in `calls` gets its tool call; the request after a tool result
 * gets words; anything else an ack.
 */
function script(server: FakeOpenAiServer): void {
  let acks = 0;
  server.reply((request) => {
    const pass = passReply(request, { summary: SUMMARY, memories: [] });
    if (pass) return pass;
    const last = request.body.messages.at(-1);
    if (last?.role === 'tool') return { content: 'Here is what the archive says.' };
    const text = typeof last?.content === 'string' ? last.content : '';
    for (const [question, call] of calls) if (text.includes(question)) return call;
    return { content: `ack ${++acks}` };
  });
}

interface SpanRow {
  from_seq: number;
  to_seq: number;
  kind: string;
  text: string | null;
}

async function activeSpans(fresh: FreshSchemaDb, channel: string): Promise<SpanRow[]> {
  const result = await fresh.db.execute(
    sql`select from_seq, to_seq, kind, text from ${sql.identifier(fresh.schema)}.context_spans where channel_key = ${channel} and active order by from_seq`,
  );
  return (result as unknown as { rows: SpanRow[] }).rows;
}

/**
 * The chat requests from `from` on that carry `question`, answered (no pass; no prompt the fake
 * refused as past its window, which the bot truncates and sends again).
 */
function turnRequests(fake: FakeOpenAiServer, from: number, question: string): RecordedRequest[] {
  return fake.completionRequests
    .slice(from)
    .filter(
      (r) => !isPassRequest(r) && r.fault === undefined && JSON.stringify(r.body.messages).includes(question),
    );
}

/** Asks `question` in `channel` with the fake scripted to call `tool`; the turn's two requests. */
async function askWithTool(
  { fake, web }: { fake: FakeOpenAiServer; web: WebClient },
  channel: string,
  question: string,
  tool: string,
  args: Record<string, unknown>,
) {
  calls.set(question, { toolCalls: [{ name: tool, arguments: args }] });
  const from = fake.completionRequests.length;
  expect(await web.post(channel, question, 'bo')).toBe('Here is what the archive says.');
  const requests = turnRequests(fake, from, question);
  expect(requests).toHaveLength(2);
  const [first, second] = requests as [RecordedRequest, RecordedRequest];
  const [call, result] = second.body.messages.slice(-2);
  if (call?.role !== 'assistant' || result?.role !== 'tool') throw new Error('no call and result at the end');
  // The result answers the call the model made, under its id.
  expect(call.tool_calls?.map((c) => [c.id, (c as { function: { name: string } }).function.name])).toEqual([
    [result.tool_call_id, tool],
  ]);
  return { first, text: String(result.content), callId: result.tool_call_id };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const it = ebbWorld({
  fake: { contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) },
  script,
  config: (url) => smallWindowConfig(url, ['[web.bot]', 'respond_to = "all"']),
  env: { LOG_LEVEL: 'info' },
  start: { logger: log.logger },
});

describe('recall of a compacted fact through the history tools', () => {
  let factSeq = 0;

  it('summarizes the fact away: a pass covers its seq and neither its summary nor the context holds it', async ({
    fresh,
    web,
  }) => {
    await web.post('other', OTHER_FACT, 'cy');
    await web.post('ops', 'morning all, the review queue is short today');
    await web.post('ops', FACT);
    const channels = new PgChannelStore({ db: fresh.db });
    const archived = await channels.readArchive('web:ops', 1, 10);
    factSeq = archived.find((m) => m.text === FACT)?.seq ?? 0;
    expect(factSeq).toBe(3);

    const covered = async () =>
      (await activeSpans(fresh, 'web:ops')).find((s) => s.from_seq <= factSeq && factSeq <= s.to_seq);
    for (let i = 0; i < MAX_FILLERS && (await covered())?.kind !== 'summary'; i++) {
      await web.post('ops', `note ${i}: build ${1000 + i} is green, review ${i % 9} merged`);
    }
    // Waits for the span (a pass may still be landing after the last filler).
    await vi.waitFor(async () => expect((await covered())?.kind).toBe('summary'), { timeout: 20_000 });
    const span = await covered();
    expect(span?.text).toContain(SUMMARY);
    for (const words of ['OPS-4821', 'Thursday', 'password']) expect(span?.text).not.toContain(words);
    await vi.waitFor(() =>
      expect(
        log
          .events('compaction.completed')
          .some((l) => l.channel === 'web:ops' && Number(l.fromSeq) <= factSeq && factSeq <= Number(l.toSeq)),
      ).toBe(true),
    );
    // Gone from the working context: only the archive has it now.
    const context = await channels.loadContext('web:ops');
    expect(context.raw.some((m) => m.text.includes('OPS-4821'))).toBe(false);
  }, 120_000);

  it('answers a question through search_history: the model reads the exact words with #seq and author, and only this channel’s', async ({
    fake,
    fresh,
    web,
  }) => {
    const { first, text, callId } = await askWithTool(
      { fake, web },
      'ops',
      SEARCH_QUESTION,
      'search_history',
      { query: 'staging password rotation' },
    );
    // The first request had no trace of the fact: the model needed the tool.
    expect(JSON.stringify(first.body)).not.toContain('OPS-4821');
    expect(text).toMatch(new RegExp(`^#${factSeq} ana \\([^)]*\\): ${escapeRegExp(FACT)}$`, 'm'));
    expect(text).toContain('Best matches for "staging password rotation"');
    // Scope: the other channel's fact, worded alike, is not found.
    expect(text).not.toContain('OPS-9917');
    expect(text).not.toContain('2nd Monday');

    // The archive holds the call and its result as a pair, right after the question.
    const channels = new PgChannelStore({ db: fresh.db });
    const head = (await channels.loadContext('web:ops')).headSeq;
    const turn = (await channels.readArchive('web:ops', head - 3, head)).map((m) => ({
      role: m.role,
      author: m.author,
      text: m.text,
      toolCalls: m.toolCalls?.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
      toolCallId: m.toolCallId,
    }));
    expect(turn).toMatchObject([
      { role: 'user', author: 'bo', text: SEARCH_QUESTION },
      {
        role: 'assistant',
        toolCalls: [
          { id: callId, name: 'search_history', arguments: '{"query":"staging password rotation"}' },
        ],
      },
      { role: 'tool', author: 'search_history', text, toolCallId: callId },
      { role: 'assistant', text: 'Here is what the archive says.' },
    ]);

    // The other channel's own search finds its fact and not this one's.
    const other = await askWithTool({ fake, web }, 'other', OTHER_QUESTION, 'search_history', {
      query: 'staging password rotation',
    });
    expect(other.text).toContain(OTHER_FACT);
    expect(other.text).not.toContain('OPS-4821');
  });

  it('reads the fact back word for word through read_history', async ({ fake, web }) => {
    const { text } = await askWithTool({ fake, web }, 'ops', READ_QUESTION, 'read_history', {
      from_seq: factSeq,
      to_seq: factSeq,
    });
    expect(text.split('\n')[0]).toBe(
      `Archived messages #${factSeq}–#${factSeq}. Lines after a message’s first are indented.`,
    );
    expect(text.split('\n')[1]).toMatch(new RegExp(`^#${factSeq} ana \\([^)]*\\): ${escapeRegExp(FACT)}$`));
    expect(text.split('\n')[2]).toBe(`[End of #${factSeq}–#${factSeq}.]`);
  });
});
