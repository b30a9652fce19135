/**
 * The world `ebb memories forget` is tested in: a fresh Postgres schema behind a proxy the test can
 * cut, the worker's real compaction processor, and the fake OpenAI server playing a model as careless
 * as a real one could be: what it is shown, it repeats, so a fact is gone only if it was never shown
 * again. `plant` puts a distinctive fact (`FACT`, said by mallory) through real passes, and
 * `whereIsTheFact` finds it in any column of any table that could keep it (`rowsHolding`, which the
 * platform deletion test uses on its own schema).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresPipeline } from '@ebb/compaction';
import { parseConfig } from '@ebb/config';
import { measureMessage, REDACTED_MESSAGE, type Tokenizer } from '@ebb/core';
import { type EbbDatabase, PgChannelStore, PgMemoryStore, PgRunStore, rowsOf } from '@ebb/db';
import { loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { type SQL, sql } from 'drizzle-orm';
import { expect } from 'vitest';
import { postgresBehindProxy } from './postgres-proxy.js';

export const FACT = '7431-ZEBRA';

/** A request to the model that shows it the fact anywhere (a message, a tool result, a summary). */
export const holdsFact = (request: RecordedRequest): boolean => JSON.stringify(request.body).includes(FACT);

export interface PlantOptions {
  /** The bot's reply at seq 5 repeats the fact, as a model answering her would. */
  readonly echo?: boolean;
  /**
   * At seq 7 the bot calls search_history, seq 8 is its result quoting seq 4 word for word, and seq 9
   * its answer repeating it.
   */
  readonly recall?: boolean;
}

export type ForgetFixture = Awaited<ReturnType<typeof startForgetFixture>>;

/** Starts the world; one per test file, so each has its own schema. `close` in `afterAll`. */
export async function startForgetFixture() {
  const tokenizer = await loadTokenizer('o200k_base');
  // Behind a proxy the failure test cuts: Postgres going away in the middle of a forget.
  const behind = await postgresBehindProxy();
  const pg = behind.fresh;
  const fake = await FakeOpenAiServer.start();
  fake.reply(carelessModel);
  const toml = `[llm]\nbase_url = "${fake.url}"\n[compaction]\nsummary_max_tokens = 1500\n`;
  const configDir = mkdtempSync(join(tmpdir(), 'ebb-forget-'));
  writeFileSync(join(configDir, 'config.toml'), toml);
  const { processor } = createPostgresPipeline({
    config: () => parseConfig(toml, 'forget-test.toml'),
    env: { OPENAI_API_KEY: 'test-key' },
    database: pg.database,
    notifier: new InProcessContextNotifier(),
  });
  const channels = new PgChannelStore({ db: pg.db });
  const memories = new PgMemoryStore({ db: pg.db });
  const runs = new PgRunStore({ db: pg.db });

  /**
   * 30 messages; mallory says the vault code at seq 4 and mentions it again at seq 27 (raw, after the
   * passes), then two passes: 1..10, then 1..20 folding the first (which is retired, its text kept).
   */
  async function plant(channelKey: string, options: PlantOptions = {}): Promise<void> {
    for (let seq = 1; seq <= 30; seq++) {
      if (options.recall === true && (seq === 7 || seq === 8)) {
        await channels.append(channelKey, recalled(seq, tokenizer));
        continue;
      }
      // With `recall`, seq 9 is the bot's answer that read the result and repeats it.
      const answer = options.recall === true && seq === 9;
      const echo = options.echo === true && seq === 5;
      const author = seq === 4 || seq === 27 ? 'mallory' : echo || answer ? 'ebb' : seq % 2 ? 'ana' : 'bo';
      const text =
        seq === 4
          ? `remember this: the vault code is ${FACT}`
          : seq === 27
            ? `again, it is ${FACT}, write it down`
            : echo
              ? `Noted: the vault code is ${FACT.toLowerCase()}.`
              : answer
                ? `The archive says the vault code is ${FACT}, as mallory said it on the first of January; noted for the release plan and the rollback drill on Friday.`
                : `message ${seq} about the release plan: the staging deploy, the changelog, the rollback drill and who signs off on Friday`;
      const { entry, archivedTokens } = measureMessage(
        { seq: 0, role: echo || answer ? 'assistant' : 'user', author, text },
        tokenizer,
        1_000,
      );
      await channels.append(channelKey, {
        ...entry,
        tokens: archivedTokens,
        contextTokens: entry.tokens,
        // As the platform named it: a deletion or an edit finds it by this id.
        platformMessageId: `m${seq}`,
      });
    }
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
      expect(result, JSON.stringify(result)).toMatchObject({ kind: 'completed' });
    }
  }

  /** The summary calls recorded in a channel's usage (`llm_usage`, purpose summary). */
  const summaryCallsRecorded = async (channelKey: string) =>
    rowsOf<{ n: number }>(
      await pg.db.execute(
        sql`select coalesce(sum(calls), 0)::int as n from llm_usage where channel_key = ${channelKey} and purpose = 'summary'`,
      ),
    )[0]?.n ?? 0;

  /** Rows of each table that hold the fact anywhere, any column, as text. */
  const whereIsTheFact = (channelKey: string) => rowsHolding(pg.db, channelKey, FACT);

  /** The fact is in no row of any table that could keep it. */
  async function expectNowhere(channelKey: string): Promise<void> {
    expect(await whereIsTheFact(channelKey)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 0,
    });
  }

  /** With `recall`: the search_history result at seq 8 is a tombstone, its call id kept. */
  async function expectCopyRedacted(channelKey: string): Promise<void> {
    const [result] = await channels.readArchive(channelKey, 8, 8);
    expect(result).toMatchObject({
      role: 'tool',
      author: 'search_history',
      text: REDACTED_MESSAGE,
      toolCallId: 'c7',
    });
  }

  /** The context as loaded, after checking its total is the sum of its parts. */
  async function expectConsistentTokens(channelKey: string) {
    const view = await channels.loadContext(channelKey);
    expect(view.tokens).toBe([...view.spans, ...view.raw].reduce((n, part) => n + part.tokens, 0));
    return view;
  }

  return {
    fake,
    /** Cut it to take Postgres away from under a running command; `restore` brings it back. */
    proxy: behind.proxy,
    /** The test's schema (a spawned `ebb start` opens it directly, not through the proxy). */
    schema: pg.schema,
    /** A DATABASE_URL of the schema through the proxy, for a spawned process that must lose it. */
    databaseUrl: pg.url,
    db: pg.db,
    channels,
    memories,
    runs,
    processor,
    /** The config.toml the commands read (the fake's base_url). */
    toml,
    /** What the commands are run with: this schema, the fake's key and a config.toml pointing at it. */
    deps: () => ({ database: pg.database, env: { OPENAI_API_KEY: 'test-key' }, cwd: configDir }),
    plant,
    summaryCallsRecorded,
    whereIsTheFact,
    expectNowhere,
    expectCopyRedacted,
    expectConsistentTokens,
    async close(): Promise<void> {
      await fake.close();
      await behind.close();
    },
  };
}

/**
 * Rows of each table that could keep `text` and hold it anywhere, any column, as text (ignoring case):
 * where a deletion, an edit or a forget must have left nothing.
 */
export async function rowsHolding(db: EbbDatabase, channelKey: string, text: string) {
  const count = async (query: SQL) => rowsOf<{ n: number }>(await db.execute(query))[0]?.n;
  const like = `%${text}%`;
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

/** The model: summarizes by repeating the start of each line it saw, and remembers the vault code whenever it sees it. */
export function carelessModel(request: RecordedRequest) {
  const input = request.body.messages.map((m: { content?: unknown }) => String(m.content ?? '')).join('\n');
  const sawFact = input.includes(FACT);
  return {
    json: {
      // Shorter than what it replaces, as a summary is (a pass may not grow the context), and
      // careless: the start of each line it saw, the fact included.
      summary: [
        'Summary of the release plan talk:',
        ...new Set(
          input
            .split('\n')
            .map((l) => l.trim())
            .filter((l) => /^\[#\d+\]/.test(l))
            .map((l) => l.slice(0, 90)),
        ),
      ].join('\n'),
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

/** With `recall`: at seq 7 the bot calls search_history, and seq 8 is its result quoting seq 4 word for word. */
function recalled(seq: 7 | 8, tokenizer: Tokenizer) {
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
