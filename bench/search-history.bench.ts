/**
 * `search_history` on a channel with 1,000,000 archived messages in the real Postgres (and 200,000
 * more in 20 other channels around it, with the same texts), end to end: the tool's argument
 * checks, `PgArchiveSearch` and the rendering of the result in o200k tokens (4,000-token budget).
 * Texts are the real #ubuntu transcript, repeated. Queries mix rare, middling and common words,
 * two-word and phrase queries, `or`, author and seq-range filters; the baseline, in the same run,
 * is a plain read of 20 messages by seq (`ArchiveSearch.read`). Target: p99 under 50 ms.
 *
 * The load (`INSERT … SELECT` from `generate_series`, the GIN index built after it) is not timed. It
 * runs in a schema of its own (`freshSchemaDb`), dropped at the end.
 */
import { type ArchiveSearch, historyTools, type Tool } from '@ebb/core';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { chatMessages, median, nowMs, percentile, table } from './support.js';

const KEY = 'web:search-bench';
const MESSAGES = 1_000_000;
const OTHER_CHANNELS = 20;
const OTHER_MESSAGES = 200_000;
const RUNS_PER_CLASS = 120;
const WARM_UP = 40;
const MAX_RESULT_TOKENS = 4_000;

interface QueryClass {
  readonly label: string;
  readonly args: (i: number) => Record<string, unknown>;
}

export async function searchHistoryBench(): Promise<string> {
  const { source, messages } = chatMessages();
  const fresh = await freshSchemaDb({ poolSize: 4 });
  if (fresh.database.kind !== 'postgres') throw new Error('the search bench needs Postgres');
  const pool = fresh.database.db.$client;
  try {
    const loadStart = nowMs();
    const client = await pool.connect();
    try {
      await client.query(`set maintenance_work_mem = '256MB'`);
      await client.query('create table bench_texts (n int primary key, author text, content text, ts text)');
      await client.query(
        `insert into bench_texts select * from unnest($1::int[], $2::text[], $3::text[], $4::text[])`,
        [
          messages.map((_, i) => i + 1),
          messages.map((m) => m.author),
          messages.map((m) => m.text.replaceAll('\u0000', ' ')),
          messages.map((m) => m.ts ?? null),
        ],
      );
      // The index is built once after the rows, not maintained row by row (the load is not measured).
      await client.query('drop index messages_search_idx');
      await client.query(
        `insert into messages (channel_key, seq, role, author, content, tokens, context_tokens, ts)
         select $1, g, 'user', t.author, t.content, 1 + length(t.content) / 4, 1 + length(t.content) / 4, t.ts
         from generate_series(1, $2::int) g join bench_texts t on t.n = (g - 1) % $3 + 1`,
        [KEY, MESSAGES, messages.length],
      );
      // Other channels hold the same texts (at other seqs): a search must skip them, never return them.
      await client.query(
        `insert into messages (channel_key, seq, role, author, content, tokens, context_tokens, ts)
         select 'web:search-bench-other-' || (g % $2), g, 'user', t.author, t.content, 10, 10, t.ts
         from generate_series(1, $1::int) g join bench_texts t on t.n = (g * 7) % $3 + 1`,
        [OTHER_MESSAGES, OTHER_CHANNELS, messages.length],
      );
      await client.query('create index messages_search_idx on messages using gin (search)');
      await client.query('analyze messages');
    } finally {
      client.release();
    }
    const loadSeconds = (nowMs() - loadStart) / 1000;

    const words = await wordBands(pool, messages);
    const authors = topAuthors(messages);
    const archive: ArchiveSearch = fresh.database.archiveSearch;
    const tokenizer = await loadTokenizer('o200k_base');
    const [searchTool, readTool] = historyTools(archive, {
      tokenizerFor: async () => tokenizer,
      maxResultTokens: MAX_RESULT_TOKENS,
    }) as [Tool, Tool];
    const context = { channelKey: KEY, signal: new AbortController().signal };
    const pick = (list: readonly string[], i: number) => list[i % list.length] as string;
    const rangeStart = (i: number) => 1 + ((i * 7_919) % (MESSAGES - 100_000));

    const classes: QueryClass[] = [
      { label: 'rare word (~14–28 matches)', args: (i) => ({ query: pick(words.rare, i) }) },
      { label: 'middling word (~700–1,100)', args: (i) => ({ query: pick(words.middling, i) }) },
      { label: 'common word (~2–7% of messages)', args: (i) => ({ query: pick(words.common, i) }) },
      {
        label: 'two common words',
        args: (i) => ({ query: `${pick(words.common, i)} ${pick(words.common, i * 3 + 1)}` }),
      },
      { label: 'phrase', args: (i) => ({ query: pick(PHRASES, i) }) },
      {
        label: 'middling or middling',
        args: (i) => ({ query: `${pick(words.middling, i)} or ${pick(words.middling, i + 7)}` }),
      },
      {
        label: 'common word, top author',
        args: (i) => ({ query: pick(words.common, i), author: pick(authors.top, i) }),
      },
      {
        label: 'common word, rare author',
        args: (i) => ({ query: pick(words.common, i), author: pick(authors.rare, i) }),
      },
      {
        label: 'common word, 100k-seq range',
        args: (i) => ({ query: pick(words.common, i), from: rangeStart(i), to: rangeStart(i) + 99_999 }),
      },
      {
        label: 'middling word, 100k-seq range',
        args: (i) => ({ query: pick(words.middling, i), from: rangeStart(i), to: rangeStart(i) + 99_999 }),
      },
      { label: 'no match', args: (i) => ({ query: `zzqx${i}nomatch` }) },
    ];

    const timeCall = async (tool: Tool, args: Record<string, unknown>) => {
      const start = nowMs();
      const outcome = await tool.call(args, context);
      const ms = nowMs() - start;
      if (outcome.isError) throw new Error(`${tool.spec.name} ${JSON.stringify(args)}: ${outcome.text}`);
      return ms;
    };
    for (let i = 0; i < WARM_UP; i++) {
      for (const c of classes) await timeCall(searchTool, c.args(i));
    }

    // Baseline: a plain read of 20 messages by seq, through the port and through read_history.
    const reads: number[] = [];
    const readTools: number[] = [];
    for (let i = 0; i < RUNS_PER_CLASS * 2; i++) {
      const from = 1 + ((i * 104_729) % (MESSAGES - 20));
      const start = nowMs();
      await archive.read(KEY, from, from + 19, 20);
      reads.push(nowMs() - start);
      readTools.push(await timeCall(readTool, { from_seq: from, to_seq: from + 19 }));
    }
    const baseline = median(reads);

    const rows: (string | number)[][] = [];
    const all: number[] = [];
    const portOnly: number[] = [];
    for (const c of classes) {
      const times: number[] = [];
      for (let i = 0; i < RUNS_PER_CLASS; i++) times.push(await timeCall(searchTool, c.args(i + WARM_UP)));
      // The same queries through the port alone: what the database costs, without the rendering.
      for (let i = 0; i < RUNS_PER_CLASS / 4; i++) {
        const a = c.args(i + WARM_UP);
        const start = nowMs();
        await archive.search(KEY, {
          text: String(a.query),
          limit: 50,
          ...(a.from === undefined ? {} : { fromSeq: Number(a.from), toSeq: Number(a.to) }),
          ...(a.author === undefined ? {} : { author: String(a.author) }),
        });
        portOnly.push(nowMs() - start);
      }
      times.sort((a, b) => a - b);
      all.push(...times);
      rows.push([
        c.label,
        times.length,
        median(times).toFixed(2),
        percentile(times, 0.99).toFixed(2),
        (median(times) / baseline).toFixed(1),
      ]);
    }
    all.sort((a, b) => a - b);
    portOnly.sort((a, b) => a - b);
    readTools.sort((a, b) => a - b);
    return [
      `${MESSAGES.toLocaleString('en')} messages in the searched channel, ${OTHER_MESSAGES.toLocaleString('en')} in ${OTHER_CHANNELS} others (same texts), from ${source}; loaded and indexed in ${loadSeconds.toFixed(0)} s (not timed below). search_history end to end (arguments, PgArchiveSearch, rendering in o200k tokens, ${MAX_RESULT_TOKENS}-token budget), ms:`,
      '',
      table(['queries', 'n', 'p50', 'p99', 'p50 / baseline'], rows),
      '',
      `**All searches: p50 ${median(all).toFixed(2)} ms, p99 ${percentile(all, 0.99).toFixed(2)} ms** (n = ${all.length}); the port alone (no rendering): p50 ${median(portOnly).toFixed(2)} ms, p99 ${percentile(portOnly, 0.99).toFixed(2)} ms.`,
      `Baseline, plain read of 20 messages by seq (ArchiveSearch.read): p50 ${baseline.toFixed(2)} ms, p99 ${percentile(
        [...reads].sort((a, b) => a - b),
        0.99,
      ).toFixed(
        2,
      )} ms; read_history of 20 messages end to end: p50 ${median(readTools).toFixed(2)} ms, p99 ${percentile(readTools, 0.99).toFixed(2)} ms.`,
      `**Ratio all-search p50 / baseline p50: ${(median(all) / baseline).toFixed(1)}.** Words by frequency in the transcript: rare ${words.rare.slice(0, 4).join(', ')}…; middling ${words.middling.slice(0, 4).join(', ')}…; common ${words.common.join(', ')}.`,
    ].join('\n');
  } finally {
    await fresh.close();
  }
}

/** Phrases that occur in the transcript tens to hundreds of times. */
const PHRASES = ['"sound card"', '"apt-get install"', '"live cd"', '"hard drive"', '"nvidia driver"'];

/**
 * Words of the transcript by how many messages hold them, without the ones Postgres' English
 * configuration drops (asked of Postgres itself, so the bands are words a search really looks up).
 */
async function wordBands(
  pool: { query(text: string, values: unknown[]): Promise<{ rows: { word: string }[] }> },
  messages: readonly { text: string }[],
): Promise<{ rare: string[]; middling: string[]; common: string[] }> {
  const counts = new Map<string, number>();
  for (const m of messages) {
    for (const w of new Set(m.text.toLowerCase().match(/[a-z]{4,}/g) ?? []))
      counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  const band = (lo: number, hi: number) =>
    [...counts]
      .filter(([, n]) => n >= lo && n <= hi)
      .map(([w]) => w)
      .sort();
  const indexed = async (words: string[], take: number) => {
    const { rows } = await pool.query(
      `select word from unnest($1::text[]) word
       where numnode(plainto_tsquery('english', word)) = 1`,
      [words],
    );
    // Spread over the band, so the same few letters do not dominate.
    const kept = rows.map((r) => r.word);
    const step = Math.max(1, Math.floor(kept.length / take));
    return kept.filter((_, i) => i % step === 0).slice(0, take);
  };
  return {
    rare: await indexed(band(1, 2), 40),
    middling: await indexed(band(50, 80), 40),
    common: await indexed(band(1_500, 5_200), 8),
  };
}

/** The most active authors, and some who wrote only a handful of messages. */
function topAuthors(messages: readonly { author: string }[]): { top: string[]; rare: string[] } {
  const counts = new Map<string, number>();
  for (const m of messages) counts.set(m.author, (counts.get(m.author) ?? 0) + 1);
  const byCount = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return {
    top: byCount.slice(0, 5).map(([a]) => a),
    rare: byCount
      .filter(([, n]) => n >= 3 && n <= 5)
      .slice(0, 20)
      .map(([a]) => a),
  };
}
