/**
 * `ebb memories forget` forgets for real: a distinctive fact said by mallory goes through real
 * compaction passes (the worker's processor against Postgres, the fake OpenAI server playing a model
 * that repeats everything it reads), and after forgetting it is nowhere in Postgres: not in memories,
 * not in any column of compaction_runs, not in any context span (active or retired), and with
 * `--archive` not in the messages either. The fake model stays as careless as a real one could be:
 * what it is shown, it repeats, so the fact is gone only if it was never shown again.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresPipeline } from '@ebb/compaction';
import { parseConfig } from '@ebb/config';
import { measureMessage, REDACTED_MESSAGE } from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore, rowsOf } from '@ebb/db';
import { loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import type { FreshSchemaDb } from '@ebb/testing/postgres';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { postgresBehindProxy } from '../../test/postgres-proxy.js';
import { main } from '../cli.js';
import { memoriesForget } from './memories.js';

const FACT = '7431-ZEBRA';
const tokenizer = await loadTokenizer('o200k_base');

let pg: FreshSchemaDb;
let behind: Awaited<ReturnType<typeof postgresBehindProxy>>;
let fake: FakeOpenAiServer;
let configDir: string;
let channels: PgChannelStore;
let memories: PgMemoryStore;
let runs: PgRunStore;
let processor: ReturnType<typeof createPostgresPipeline>['processor'];

/** The model: summarizes by repeating its whole input, and remembers the vault code whenever it sees it. */
function carelessModel(request: RecordedRequest) {
  const input = request.body.messages.map((m: { content?: unknown }) => String(m.content ?? '')).join('\n');
  const sawFact = input.includes(FACT);
  return {
    json: {
      summary: `Summary of what was said:\n${input.slice(-3000)}`,
      memories: sawFact
        ? [
            {
              type: 'fact',
              text: `The vault code is ${FACT}`,
              importance: 0.9,
              speaker: 'mallory',
              fromSeq: 4,
              toSeq: 4,
            },
            {
              type: 'fact',
              text: 'Ana runs the deploys',
              importance: 0.5,
              speaker: 'ana',
              fromSeq: 1,
              toSeq: 1,
            },
          ]
        : [],
    },
  };
}

beforeAll(async () => {
  // Behind a proxy the failure test cuts: Postgres going away in the middle of a forget.
  behind = await postgresBehindProxy();
  pg = behind.fresh;
  fake = await FakeOpenAiServer.start();
  fake.reply(carelessModel);
  const toml = `[llm]\nbase_url = "${fake.url}"\n[compaction]\nsummary_max_tokens = 1500\n`;
  configDir = mkdtempSync(join(tmpdir(), 'ebb-forget-'));
  writeFileSync(join(configDir, 'config.toml'), toml);
  ({ processor } = createPostgresPipeline({
    config: () => parseConfig(toml, 'forget-test.toml'),
    env: { OPENAI_API_KEY: 'test-key' },
    database: pg.database,
    notifier: new InProcessContextNotifier(),
  }));
  channels = new PgChannelStore({ db: pg.db });
  memories = new PgMemoryStore({ db: pg.db });
  runs = new PgRunStore({ db: pg.db });
});
afterAll(async () => {
  await fake?.close();
  await behind?.close();
});

const deps = () => ({ database: pg.database, env: { OPENAI_API_KEY: 'test-key' }, cwd: configDir });

/** With `recall`: at seq 7 the bot calls search_history, and seq 8 is its result quoting seq 4 word for word. */
function recalled(seq: 7 | 8) {
  const call = { id: 'c7', name: 'search_history', arguments: '{"query":"vault code"}' };
  const message =
    seq === 7
      ? { seq: 0, role: 'assistant' as const, author: 'ebb', text: '', toolCalls: [call] }
      : {
          seq: 0,
          role: 'tool' as const,
          author: 'search_history',
          text: `#4 mallory (2026-01-01T00:00:00Z): remember this: the vault code is ${FACT}`,
          toolCallId: 'c7',
        };
  const { entry, archivedTokens } = measureMessage(message, tokenizer, 1_000);
  return { ...entry, tokens: archivedTokens, contextTokens: entry.tokens };
}

/**
 * 30 messages; mallory says the vault code at seq 4 and mentions it again at seq 27 (raw, after the
 * passes). With `echo`, the bot's reply at seq 5 repeats it, as a model answering her would.
 */
async function plant(channelKey: string, options: { echo?: boolean; recall?: boolean } = {}): Promise<void> {
  for (let seq = 1; seq <= 30; seq++) {
    if (options.recall === true && (seq === 7 || seq === 8)) {
      await channels.append(channelKey, recalled(seq));
      continue;
    }
    const echo = options.echo === true && seq === 5;
    const author = seq === 4 || seq === 27 ? 'mallory' : echo ? 'ebb' : seq % 2 ? 'ana' : 'bo';
    const text =
      seq === 4
        ? `remember this: the vault code is ${FACT}`
        : seq === 27
          ? `again, it is ${FACT}, write it down`
          : echo
            ? `Noted: the vault code is ${FACT.toLowerCase()}.`
            : `message ${seq} about the release plan`;
    const { entry, archivedTokens } = measureMessage(
      { seq: 0, role: echo ? 'assistant' : 'user', author, text },
      tokenizer,
      1_000,
    );
    await channels.append(channelKey, { ...entry, tokens: archivedTokens, contextTokens: entry.tokens });
  }
  // Two passes: 1..10, then 1..20 folding the first (which is retired, its text kept).
  for (const [fromSeq, toSeq] of [
    [1, 10],
    [1, 20],
  ] as const) {
    const generation = await channels.generation(channelKey);
    const jobId = `${channelKey}-${fromSeq}-${toSeq}`;
    const result = await processor({
      jobId,
      channelKey,
      tier: 'background',
      fromSeq,
      toSeq,
      generation,
      attempt: 1,
    });
    expect(result).toMatchObject({ kind: 'completed' });
  }
}

/** Rows of each table that hold the fact anywhere, any column, as text. */
async function whereIsTheFact(channelKey: string) {
  const count = async (query: ReturnType<typeof sql>) =>
    rowsOf<{ n: number }>(await pg.db.execute(query))[0]?.n;
  const like = `%${FACT}%`;
  return {
    memories: await count(
      sql`select count(*)::int as n from memories t where t.channel_key = ${channelKey} and t::text ilike ${like}`,
    ),
    compactionRuns: await count(
      sql`select count(*)::int as n from compaction_runs t where t.channel_key = ${channelKey} and t::text ilike ${like}`,
    ),
    activeSpans: await count(
      sql`select count(*)::int as n from context_spans t where t.channel_key = ${channelKey} and active and t::text ilike ${like}`,
    ),
    retiredSpans: await count(
      sql`select count(*)::int as n from context_spans t where t.channel_key = ${channelKey} and not active and t::text ilike ${like}`,
    ),
    messages: await count(
      sql`select count(*)::int as n from messages t where t.channel_key = ${channelKey} and t::text ilike ${like}`,
    ),
  };
}

async function expectConsistentTokens(channelKey: string) {
  const view = await channels.loadContext(channelKey);
  expect(view.tokens).toBe([...view.spans, ...view.raw].reduce((n, part) => n + part.tokens, 0));
  return view;
}

describe('ebb memories forget --speaker', () => {
  it('without --yes shows what it would do and changes nothing; with --yes the fact is gone from everything but the archive', async () => {
    const key = 'web:inj1';
    await plant(key);
    const before = await whereIsTheFact(key);
    // The fact is everywhere a pass puts it: the memory, both checkpoints, the active and the retired span.
    expect(before).toEqual({ memories: 1, compactionRuns: 2, activeSpans: 1, retiredSpans: 1, messages: 2 });
    const generation = await channels.generation(key);

    const dry = captureIo();
    expect(await memoriesForget({ speaker: 'mallory', channel: key }, dry, deps())).toBe(2);
    expect(dry.stdout()).toContain(`would forget 1 memory from ${key} about mallory:`);
    expect(dry.stdout()).toContain(
      `${key}: would redact: 2 messages to redact; 1 summary span to summarize again (1..20)`,
    );
    expect(dry.stdout()).toContain('Nothing was changed.');
    expect(await whereIsTheFact(key)).toEqual(before);

    const requestsBefore = fake.requests.length;
    const io = captureIo();
    expect(await memoriesForget({ speaker: 'mallory', yes: true }, io, deps())).toBe(0);
    expect(io.stdout()).toContain('forgot 1 memory about mallory:');
    expect(io.stdout()).toContain(
      `${key}: 2 messages redacted; 1 summary span summarized again (1..20); 2 checkpoint(s) cleared`,
    );
    expect(io.stdout()).toContain('The archived messages are kept');

    // The summary was written again by the model, from the archive with mallory's messages redacted.
    const resummarize = fake.requests.slice(requestsBefore);
    expect(resummarize.length).toBeGreaterThan(0);
    expect(JSON.stringify(resummarize.map((r) => r.body))).not.toContain(FACT);
    expect(JSON.stringify(resummarize.map((r) => r.body))).toContain(REDACTED_MESSAGE);

    // Only the archive and the raw message still hold it (no --archive).
    expect(await whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 2,
    });
    // The memories that summary call proposed were not stored: ana's memory stays as it was.
    expect((await memories.list({ channelKey: key })).map((m) => m.text)).toEqual(['Ana runs the deploys']);
    const view = await expectConsistentTokens(key);
    expect(view.generation).toBe(generation + 1);
    expect(view.spans).toHaveLength(1);
    // A pass over the prefix later folds the clean summary, and learns nothing of the fact from it.
    const result = await processor({
      jobId: `${key}-1-24`,
      channelKey: key,
      tier: 'background',
      fromSeq: 1,
      toSeq: 24,
      generation: view.generation,
      attempt: 1,
    });
    expect(result).toMatchObject({ kind: 'completed' });
    expect(await whereIsTheFact(key)).toMatchObject({ memories: 0, activeSpans: 0, retiredSpans: 0 });
  });

  it('with --archive also overwrites the archived messages, the raw one in the context included', async () => {
    const key = 'web:inj2';
    await plant(key);
    const io = captureIo();
    expect(
      await memoriesForget({ speaker: 'mallory', channel: key, archive: true, yes: true }, io, deps()),
    ).toBe(0);
    expect(io.stdout()).toContain('2 messages overwritten in the archive');
    expect(await whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 0,
    });

    const archived = await channels.readArchive(key, 1, 30);
    expect(archived.filter((m) => m.author === 'mallory').map((m) => [m.seq, m.text])).toEqual([
      [4, REDACTED_MESSAGE],
      [27, REDACTED_MESSAGE],
    ]);
    const view = await expectConsistentTokens(key);
    expect(view.raw.find((m) => m.seq === 27)?.text).toBe(REDACTED_MESSAGE);
  });

  it('with --speaker --archive also overwrites the search_history results that quoted her', async () => {
    const key = 'web:inj2r';
    await plant(key, { recall: true });
    const io = captureIo();
    expect(
      await memoriesForget({ speaker: 'mallory', channel: key, archive: true, yes: true }, io, deps()),
    ).toBe(0);
    expect(io.stdout()).toContain('3 messages overwritten in the archive');
    expect(await whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 0,
    });
    const [result] = await channels.readArchive(key, 8, 8);
    expect(result).toMatchObject({
      role: 'tool',
      author: 'search_history',
      text: REDACTED_MESSAGE,
      toolCallId: 'c7',
    });
    await expectConsistentTokens(key);
  });

  it('refuses --archive without --speaker or --match, as `ebb memories forget` and as `ebb forget`', async () => {
    const io = captureIo();
    expect(await memoriesForget({ channel: 'web:inj1', archive: true, yes: true }, io, deps())).toBe(2);
    expect(io.stderr()).toContain('--archive redacts the selected messages');
    for (const argv of [
      ['forget', '--channel', 'web:inj1', '--archive', '--yes'],
      ['memories', 'forget', '--channel', 'web:inj1', '--archive', '--yes'],
    ]) {
      const cli = captureIo();
      expect(await main(argv, cli)).toBe(2);
      expect(cli.stderr()).toBe(
        'ebb memories forget: --archive redacts the selected messages: use it with --speaker NAME or --match TEXT',
      );
    }
  });
});

describe('ebb forget --match', () => {
  it('finds the fact where the bot repeated it, which --speaker alone leaves behind', async () => {
    const key = 'web:inj6';
    await plant(key, { echo: true });
    expect(await whereIsTheFact(key)).toMatchObject({ memories: 1, activeSpans: 1, messages: 3 });
    // --match selects every message holding the fact, whoever wrote it, and the memory whose text holds it.
    const all = captureIo();
    expect(await memoriesForget({ match: FACT.toLowerCase(), channel: key }, all, deps())).toBe(2);
    expect(all.stdout()).toContain(`would forget 1 memory from ${key} holding "${FACT.toLowerCase()}":`);
    expect(all.stdout()).toContain(`${key}: would redact: 3 messages to redact;`);

    // What mallory wrote goes; the bot's reply that repeated it, and the summary built from that reply, stay.
    const speaker = captureIo();
    expect(
      await memoriesForget({ speaker: 'mallory', channel: key, archive: true, yes: true }, speaker, deps()),
    ).toBe(0);
    expect(await whereIsTheFact(key)).toMatchObject({ activeSpans: 1, messages: 1 });

    const dry = captureIo();
    expect(await memoriesForget({ match: FACT.toLowerCase(), channel: key }, dry, deps())).toBe(2);
    // mallory's memory went with --speaker; what is left is the reply and the summary built from it.
    expect(dry.stdout()).toContain(`would forget 0 memories from ${key} holding "${FACT.toLowerCase()}"`);
    expect(dry.stdout()).toContain(
      `${key}: would redact: 1 message to redact; 1 summary span to summarize again`,
    );

    const io = captureIo();
    expect(
      await memoriesForget({ match: FACT.toLowerCase(), channel: key, archive: true, yes: true }, io, deps()),
    ).toBe(0);
    expect(await whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 0,
    });
    const archived = await channels.readArchive(key, 5, 5);
    expect(archived.map((m) => [m.author, m.text])).toEqual([['ebb', REDACTED_MESSAGE]]);
    await expectConsistentTokens(key);
  });

  it('refuses a --match too short to be specific', async () => {
    const io = captureIo();
    expect(await main(['forget', '--match', 'a b', '--yes'], io)).toBe(2);
    expect(io.stderr()).toContain('--match needs at least 4 characters');
  });
});

describe('ebb memories forget --id and --channel', () => {
  it('--id redacts the memory’s source messages from the summaries and checkpoints, and keeps the rest', async () => {
    const key = 'web:inj3';
    await plant(key);
    const [vault] = (await memories.list({ channelKey: key })).filter((m) => m.text.includes(FACT));
    expect(vault).toMatchObject({ fromSeq: 4, toSeq: 4, speaker: 'mallory' });
    const io = captureIo();
    expect(await memoriesForget({ ids: [vault?.id ?? ''], yes: true }, io, deps())).toBe(0);
    expect(io.stdout()).toContain(`${key}: 1 message redacted; 1 summary span summarized again (1..20)`);
    expect(await whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 2,
    });
    expect((await memories.list({ channelKey: key })).map((m) => m.text)).toEqual(['Ana runs the deploys']);
    // Only the source message (seq 4) was redacted: the rest of the range is still summarized.
    const [span] = (await expectConsistentTokens(key)).spans;
    expect(span?.kind === 'summary' ? span.text : '').toContain('message 5 about the release plan');
  });

  it('--channel forgets every memory of the channel and redacts all their sources', async () => {
    const key = 'web:inj4';
    const bystander = 'web:inj5';
    await plant(key);
    await plant(bystander);
    const io = captureIo();
    expect(await memoriesForget({ channel: key, yes: true }, io, deps())).toBe(0);
    expect(io.stdout()).toContain(`forgot 2 memories from ${key}:`);
    expect(await whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 2,
    });
    expect(await memories.list({ channelKey: key })).toEqual([]);
    // Another channel where the same was said is not touched.
    expect(await whereIsTheFact(bystander)).toEqual({
      memories: 1,
      compactionRuns: 2,
      activeSpans: 1,
      retiredSpans: 1,
      messages: 2,
    });
    expect((await runs.recent(key, 10)).every((r) => r.status === 'completed')).toBe(true);
  });
});

describe('ebb forget cut off part-way', () => {
  it('leaves what selects the messages in place, so running it again finishes the job', async () => {
    const key = 'web:inj7';
    await plant(key, { echo: true });
    // The re-summarizing call hangs long enough for Postgres to go away under it.
    fake.fail({ kind: 'slow', delayMs: 1_500 }, { times: 1 });
    const asked = fake.completionRequests.length;
    const first = captureIo();
    const cut = memoriesForget({ match: FACT, channel: key, archive: true, yes: true }, first, deps());
    await vi.waitFor(() => expect(fake.completionRequests.length).toBe(asked + 1), { timeout: 10_000 });
    behind.proxy.cut();
    expect(await cut).toBe(1);
    behind.proxy.restore();
    // Nothing was forgotten yet, and the archive still finds every message holding the fact.
    expect(await whereIsTheFact(key)).toMatchObject({ memories: 1, messages: 3 });

    const again = captureIo();
    expect(await memoriesForget({ match: FACT, channel: key, archive: true, yes: true }, again, deps())).toBe(
      0,
    );
    expect(await whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 0,
    });
  });
});
