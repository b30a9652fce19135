/**
 * `ebb status` against the real Postgres stores: a Slack channel with a summary span, two passes,
 * memories and a channel-pattern override of its thresholds; a thread and a web channel beside it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, resolveChannel } from '@ebb/config';
import { historyTools, type NewMessage, periodOf, systemPromptTokens } from '@ebb/core';
import {
  makeDefaultPgliteTemplate,
  PgArchiveSearch,
  PgChannelStore,
  PgMemoryStore,
  PgRunStore,
  PgTakeBackLog,
  PgUsageStore,
} from '@ebb/db';
import { emptySchema, type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { Toolbox } from '@ebb/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { usageBar } from '../bot/context-report.js';
import { OfferedTools } from '../status/offered-tools.js';
import { status } from './status.js';

const SYSTEM_PROMPT = 'You are Ebb, a terse assistant.';
const dir = mkdtempSync(join(tmpdir(), 'ebb-status-'));
const configFile = join(dir, 'config.toml');
writeFileSync(
  configFile,
  [
    '[llm]',
    'context_window = 16000',
    'max_output_tokens = 1000',
    '[memory]',
    'recall_max_tokens = 200',
    '[bot]',
    `system_prompt = "${SYSTEM_PROMPT}"`,
    '[prices."gpt-4o-mini"]',
    'input_per_mtok = 0.15',
    'cached_input_per_mtok = 0.075',
    'output_per_mtok = 0.6',
    '[prices."gpt-5.4-mini"]',
    'input_per_mtok = 0.75',
    'output_per_mtok = 4.5',
    '[channels."slack:T1:*".compaction]',
    'background_threshold = 0.5',
    'aggressive_threshold = 0.7',
    // The channel itself (not its threads) has a daily spend limit.
    '[channels."slack:T1:C1".budget]',
    'daily_usd = 1',
  ].join('\n'),
);

const SLACK = 'slack:T1:C1';
const THREAD = 'slack:T1:C1:1700000000.0001';
const WEB = 'web:w1';

const capture = captureIo;

function message(i: number, tokens: number): NewMessage {
  return { role: 'user', author: 'ana', text: `message ${i}`, tokens, contextTokens: tokens };
}

let pg: FreshSchemaDb;
let expectedUsage: number;
let reserved: number;

beforeAll(async () => {
  pg = await freshSchemaDb();
  const channels = new PgChannelStore({ db: pg.db });
  const runs = new PgRunStore({ db: pg.db });
  const memories = new PgMemoryStore({ db: pg.db });
  // 30 messages of 400 tokens; 1..10 summarized into 50 tokens: 50 + 20 × 400 in the context.
  for (let i = 1; i <= 30; i++) await channels.append(SLACK, message(i, 400));
  await channels.splice(SLACK, { jobId: 'job-done', fromSeq: 1, toSeq: 10, text: 'Summary.', tokens: 50 });
  await channels.setCalibration(SLACK, { factor: 1.2, samples: 4 });
  await channels.append(THREAD, message(1, 30));
  for (let i = 1; i <= 3; i++) await channels.append(WEB, message(i, 20));

  // A day of replies and passes, and an older hour the last day leaves out.
  const usage = new PgUsageStore({ db: pg.db });
  const calls = { channelKey: SLACK, model: 'gpt-4o-mini' } as const;
  await usage.record(
    {
      ...calls,
      purpose: 'reply',
      calls: 10,
      promptTokens: 100_000,
      cachedTokens: 90_000,
      completionTokens: 500,
      replies: 8,
      coldReplies: 2,
    },
    new Date(),
  );
  await usage.record(
    { ...calls, purpose: 'summary', calls: 1, promptTokens: 4_000, cachedTokens: 0, completionTokens: 100 },
    new Date(),
  );
  await usage.record(
    { ...calls, purpose: 'reply', calls: 99, promptTokens: 9_999, cachedTokens: 0, completionTokens: 9 },
    new Date(Date.now() - 3 * 24 * 3600_000),
  );

  const range = { channelKey: SLACK, fromSeq: 1, toSeq: 10, generation: 0 };
  await runs.create({ jobId: 'job-done', tier: 'background', usage: 0.81, ...range });
  await runs.finish('job-done', {
    status: 'completed',
    tokensBefore: 12_000,
    tokensAfter: 8_050,
    summaryTokens: 50,
    memoriesAdded: 2,
    model: 'gpt-4o-mini',
    fallback: false,
    inputTokens: 4_000,
    outputTokens: 100,
    durationMs: 4_200,
  });
  await runs.create({ jobId: 'job-failed', tier: 'aggressive', usage: 0.72, ...range, toSeq: 20 });
  await runs.finish('job-failed', { status: 'failed', error: 'llm_timeout', durationMs: 30_000 });
  await runs.create({
    jobId: 'job-refused',
    tier: 'background',
    usage: 0.8,
    ...range,
    channelKey: WEB,
    toSeq: 2,
  });
  await runs.finish('job-refused', { status: 'failed', error: 'llm_auth' });

  const memory = { type: 'fact', importance: 0.5, fromSeq: 1, toSeq: 2 } as const;
  await memories.upsert([
    { ...memory, text: 'Ana owns the deploy', speaker: 'ana', scope: SLACK, channelKey: SLACK },
    { ...memory, text: 'Bob prefers tea', speaker: 'bob', scope: SLACK, channelKey: SLACK },
    // A thread shares its channel's scope.
    { ...memory, text: 'The thread settled on Friday', scope: SLACK, channelKey: THREAD },
    { ...memory, text: 'Web visitor likes graphs', scope: WEB, channelKey: WEB },
  ]);

  const tokenizer = await loadTokenizer('o200k_base');
  // The system prompt and the tool definitions the bot would offer the channel (the default allow
  // list: the two history tools), counted the way the bot counts them; no memories (only the bot
  // knows what a turn recalled, and it reserves only that, never the recall budget).
  const builtIns = historyTools(new PgArchiveSearch({ db: pg.db }), {
    tokenizerFor: async () => tokenizer,
    maxResultTokens: 4_000,
  });
  const offered = new OfferedTools(new Toolbox({ builtIns }));
  const config = parseConfig(readFileSync(configFile, 'utf8'), configFile);
  reserved =
    systemPromptTokens(tokenizer, SYSTEM_PROMPT) +
    offered.tokensFor(resolveChannel(config, SLACK), tokenizer);
  expectedUsage = ((8_050 + reserved) * 1.2) / 15_000;
});

afterAll(async () => {
  await pg?.close();
});

const deps = () => ({ database: pg.database, env: {}, cwd: dir });

describe('ebb status', () => {
  it('prints every channel with its bar, tokens, spans, passes and memories', async () => {
    const io = capture();
    const code = await status({ config: configFile }, io, deps());
    expect(io.stderr()).toBe('');
    expect(code).toBe(0);
    const text = io.stdout();
    expect(text).toContain(`config: ${configFile}`);
    expect(text).toContain('3 channels');
    // Keys in order, the Slack channel against its own (overridden) thresholds.
    const headers = text.split('\n').filter((l) => /^(slack|web):/.test(l));
    expect(headers.map((l) => l.split(' ')[0])).toEqual([SLACK, THREAD, WEB]);
    expect(headers[0]).toBe(
      `${SLACK}  ${usageBar(expectedUsage, [0.5, 0.7, 0.95])} ${(expectedUsage * 100).toFixed(1)}%` +
        '  (background 50%, aggressive 70%, emergency 95%; past background)',
    );
    // The web channel keeps the defaults.
    expect(headers[2]).toContain('(background 80%, aggressive 85%, emergency 95%)');
    expect(text).toContain(
      `  tokens    ${(8_050 + reserved).toLocaleString('en-US')} of 15,000: context 8,050 + system prompt and tools ${reserved}, calibration ×1.20`,
    );
    expect(text).toContain('  messages  30 archived, 20 in the context; generation 1');
    expect(text).toContain('  spans     1 summary (50 tokens), 0 pending truncations');
    expect(text).toContain(
      '  last day  11 model calls, 104,000 prompt tokens (90.0% of reply prompts cached), 600 completion; $0.0092; 8 replies, 25.0% after the cache went cold, $1.0688 per 1,000',
    );
    // Today's calls (not the older hour's) toward the channel's limit, and when it resets.
    const tomorrow = periodOf('day', Date.now()).end.toISOString().slice(0, 16).replace('T', ' ');
    expect(text.split('\n').filter((l) => l.startsWith('  budget'))).toEqual([
      `  budget    $0.0092 of $1.00 today (this channel); resets ${tomorrow} UTC`,
    ]);
    expect(text).toContain(`  memories  3 in scope ${SLACK}`);
    expect(text).toContain(`  memories  1 in scope ${WEB}`);
    expect(text.split('\n').filter((l) => l.startsWith('  take-backs'))).toEqual([
      '  take-backs 0 pending',
      '  take-backs 0 pending',
      '  take-backs 0 pending',
    ]);
    expect(text).toMatch(
      / {2}passes {4}\d{4}-\d\d-\d\d \d\d:\d\dZ aggressive #1–#20 failed \(llm_timeout\): 30\.0 s/,
    );
    expect(text).toMatch(
      / {10}\d{4}-\d\d-\d\d \d\d:\d\dZ background #1–#10 completed: 12,000 → 8,050 tokens, 4\.2 s, \$0\.0007/,
    );
    expect(text).toContain('  passes    none yet');
    // A refused key is said in words, once, above the passes of the channel it stopped.
    const alerts = text.split('\n').filter((l) => l.includes('ALERT'));
    expect(alerts).toEqual([
      "  ALERT     the model provider refused the newest pass (llm_auth): check OPENAI_API_KEY and the account's credit; passes fail until then",
    ]);
    expect(text.indexOf(alerts[0] ?? '')).toBeGreaterThan(text.indexOf(`${WEB}  `));
    // Settings only for one channel.
    expect(text).not.toContain('settings');
  });

  it('--channel --json: one JSON document with stable fields and where each threshold came from', async () => {
    const io = capture();
    const code = await status({ config: configFile, channel: SLACK, json: true }, io, deps());
    expect(code).toBe(0);
    const report = JSON.parse(io.stdout());
    expect(Object.keys(report)).toEqual(['config', 'channels', 'mcp', 'contextCache']);
    expect(report.mcp).toEqual([]);
    expect(report.config).toBe(configFile);
    expect(report.channels).toHaveLength(1);
    const [channel] = report.channels;
    expect(Object.keys(channel)).toEqual([
      'key',
      'usage',
      'reached',
      'thresholds',
      'tokens',
      'messages',
      'spans',
      'microcompaction',
      'generation',
      'memories',
      'passes',
      'lastDay',
      'takeBacks',
      'budget',
      'settings',
    ]);
    expect(channel.takeBacks).toEqual({ pending: 0, oldest: null });
    expect(channel.budget).toEqual([
      {
        scope: 'channel',
        period: 'day',
        limitUsd: 1,
        spentUsd: expect.closeTo((14_000 * 0.15 + 90_000 * 0.075 + 600 * 0.6) / 1_000_000, 12),
        resetsAt: periodOf('day', Date.now()).end.toISOString(),
      },
    ]);
    expect(channel.lastDay).toEqual({
      calls: 11,
      promptTokens: 104_000,
      cachedTokens: 90_000,
      completionTokens: 600,
      replyCacheShare: 0.9,
      replies: 8,
      coldReplyShare: 0.25,
      // The replies' calls only: 10,000 uncached, 90,000 cached, 500 completion.
      usdPer1kReplies: expect.closeTo((1_000 * (10_000 * 0.15 + 90_000 * 0.075 + 500 * 0.6)) / 1e6 / 8, 12),
      costUsd: expect.closeTo((14_000 * 0.15 + 90_000 * 0.075 + 600 * 0.6) / 1_000_000, 12),
      unpriced: [],
    });
    expect(channel.microcompaction).toEqual({ stubbed: 0, tokensSaved: 0 });
    expect(channel.key).toBe(SLACK);
    expect(channel.usage).toBeCloseTo(expectedUsage, 10);
    expect(channel.reached).toBe('background');
    expect(channel.thresholds).toEqual({ background: 0.5, aggressive: 0.7, emergency: 0.95 });
    expect(channel.tokens).toEqual({ context: 8_050, reserved, budget: 15_000, calibration: 1.2 });
    expect(channel.messages).toEqual({ archived: 30, inContext: 20 });
    expect(channel.spans).toEqual({ summaries: 1, truncations: 0, summaryTokens: 50 });
    expect(channel.generation).toBe(1);
    expect(channel.memories).toEqual({ scope: SLACK, count: 3 });

    expect(channel.passes.map((p: { jobId: string }) => p.jobId)).toEqual(['job-failed', 'job-done']);
    const [failed, done] = channel.passes;
    expect(failed).toMatchObject({
      status: 'failed',
      tier: 'aggressive',
      error: 'llm_timeout',
      costUsd: null,
    });
    expect(done).toEqual({
      jobId: 'job-done',
      tier: 'background',
      status: 'completed',
      fromSeq: 1,
      toSeq: 10,
      usage: 0.81,
      tokensBefore: 12_000,
      tokensAfter: 8_050,
      summaryTokens: 50,
      memoriesAdded: 2,
      model: 'gpt-4o-mini',
      fallback: false,
      durationMs: 4_200,
      costUsd: (4_000 * 0.15 + 100 * 0.6) / 1_000_000,
      error: null,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      finishedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });

    const source = (key: string) =>
      channel.settings.find((s: { key: string }) => s.key === key) as { value: unknown; source: string };
    expect(source('compaction.background_threshold')).toEqual({
      key: 'compaction.background_threshold',
      value: 0.5,
      source: '[channels."slack:T1:*"]',
    });
    expect(source('compaction.aggressive_threshold').source).toBe('[channels."slack:T1:*"]');
    expect(source('compaction.emergency_threshold')).toMatchObject({ value: 0.95, source: 'default' });
    expect(source('llm.context_window')).toMatchObject({ value: 16_000, source: '[llm]' });
    expect(source('compaction.summary_max_tokens').source).toMatch(/^default \(/);
    // How long the provider keeps the channel's prompt cached, and why: the model takes a day.
    expect(source('llm.prompt_cache_retention')).toMatchObject({ value: '24h' });
    expect(source('llm.cache_ttl_seconds')).toMatchObject({
      value: 86_400,
      source: expect.stringMatching(/^default \(/),
    });
    expect(source('compaction.working_tokens')).toMatchObject({ value: 12_000, source: 'default' });
  });

  it("shows a channel's pending take-backs, whichever process recorded them, until each is complete", async () => {
    const log = new PgTakeBackLog({ db: pg.db });
    const deletion = await log.recordTakeBack(WEB, {
      kind: 'deleted',
      ranges: [{ fromSeq: 2, toSeq: 2 }],
      platformMessageIds: ['w2'],
    });
    const forget = await log.recordTakeBack(WEB, {
      kind: 'forget',
      ranges: [{ fromSeq: 3, toSeq: 3 }],
      platformMessageIds: [],
    });
    const read = async () => {
      const text = capture();
      expect(await status({ config: configFile }, text, deps())).toBe(0);
      const json = capture();
      expect(await status({ config: configFile, channel: WEB, json: true }, json, deps())).toBe(0);
      const lines = text.stdout().split('\n');
      const web = lines.indexOf(lines.find((l) => l.startsWith(`${WEB}  `)) ?? '');
      return {
        // The web channel's block is the last one: its take-backs line, and the other channels'.
        line: lines.slice(web).find((l) => l.startsWith('  take-backs')),
        others: lines.slice(0, web).filter((l) => l.startsWith('  take-backs')),
        json: JSON.parse(json.stdout()).channels[0].takeBacks,
      };
    };
    const pending = await read();
    expect(pending.line).toMatch(/^ {2}take-backs 2 pending \(oldest \d+ (s|min), deletion\)$/);
    expect(pending.others).toEqual(['  take-backs 0 pending', '  take-backs 0 pending']);
    expect(pending.json).toEqual({
      pending: 2,
      oldest: { kind: 'deleted', createdAt: new Date(deletion.createdAt).toISOString() },
    });

    await log.finishTakeBack(deletion.id, { counts: { memories: 0, checkpoints: 0, summaries: 1 } });
    expect((await read()).line).toMatch(/^ {2}take-backs 1 pending \(oldest \d+ (s|min), forget\)$/);
    await log.finishTakeBack(forget.id, { counts: { memories: 0, checkpoints: 0, summaries: 0 } });
    const done = await read();
    expect(done.line).toBe('  take-backs 0 pending');
    expect(done.json).toEqual({ pending: 0, oldest: null });
  });

  it('--channel shows the settings table in text', async () => {
    const io = capture();
    expect(await status({ config: configFile, channel: SLACK }, io, deps())).toBe(0);
    const lines = io.stdout().split('\n');
    expect(lines.filter((l) => /^(slack|web):/.test(l))).toHaveLength(1);
    expect(lines).toContain('  settings');
    expect(lines.find((l) => l.includes('compaction.background_threshold'))).toMatch(
      /^ {4}compaction\.background_threshold +0\.5 +\[channels\."slack:T1:\*"\]$/,
    );
  });

  it('refuses a channel it has never stored, naming the keys that start with it', async () => {
    const io = capture();
    expect(await status({ config: configFile, channel: 'slack:T1' }, io, deps())).toBe(1);
    expect(io.stdout()).toBe('');
    expect(io.stderr()).toContain('no channel slack:T1 in the database');
    expect(io.stderr()).toContain(`${SLACK}, ${THREAD}`);
  });

  it('will not open an embedded database a live process holds, and names it; a stale lock is taken over', async () => {
    await makeDefaultPgliteTemplate();
    const dataDir = mkdtempSync(join(tmpdir(), 'ebb-status-locked-'));
    // A running Ebb, as its lock file says (a live process: this test's child).
    const holder = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const lock = { pid: holder.pid, command: 'ebb dev', since: '2026-12-02T09:00:00.000Z' };
      writeFileSync(join(dataDir, 'pglite.lock'), JSON.stringify(lock));
      const io = capture();
      expect(await status({ config: configFile }, io, { env: { EBB_DATA_DIR: dataDir }, cwd: dir })).toBe(1);
      expect(io.stderr()).toContain(`open in another process (pid ${holder.pid}`);
      expect(io.stderr()).toContain('ebb dev');
      expect(io.stderr()).toContain('/context');
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
    // Its process gone, the lock is stale: the next status opens the database, and leaves no lock.
    const io = capture();
    expect(await status({ config: configFile }, io, { env: { EBB_DATA_DIR: dataDir }, cwd: dir })).toBe(0);
    expect(io.stderr()).toBe('');
    expect(existsSync(join(dataDir, 'pglite.lock'))).toBe(false);
  });

  it('opens the embedded database with --embedded: a new one, from the install template, has no channels yet', async () => {
    // What `npm install` makes; here in case this checkout's was removed (a no-op otherwise).
    await makeDefaultPgliteTemplate();
    const dataDir = mkdtempSync(join(tmpdir(), 'ebb-status-pglite-'));
    const io = capture();
    const code = await status({ config: configFile, embedded: true }, io, { env: { EBB_DATA_DIR: dataDir } });
    expect(io.stderr()).toBe('');
    expect(code).toBe(0);
    expect(io.stdout()).toContain('no channels yet');
  }, 120_000);

  it('says when the database has no Ebb tables yet', async () => {
    const empty = await emptySchema();
    try {
      const io = capture();
      const code = await status({ config: configFile }, io, { env: { DATABASE_URL: empty.url } });
      expect(code).toBe(1);
      expect(io.stderr()).toContain('ebb status: listChannels failed');
      expect(io.stderr()).toContain('run `ebb migrate` first');
    } finally {
      await empty.drop();
    }
  });

  it('reports a broken config as sentences', async () => {
    const bad = join(dir, 'bad.toml');
    writeFileSync(bad, '[compaction]\nbackground_threshold = 2\n');
    const io = capture();
    expect(await status({ config: bad }, io, deps())).toBe(1);
    expect(io.stderr()).toContain('compaction.background_threshold');
    expect(io.stderr()).toContain('ebb status: fix the problem');
  });
});
