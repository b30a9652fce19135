/**
 * The log contract: the JSON lines of a background pass, an emergency truncation, a failed pass and
 * a rejected reload, field by field; every line with an `event` named `area.verb` (log-events.test.ts
 * checks every call in the sources) and every channel under `channel`; and no secret from the
 * environment anywhere in the output.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createEmbeddedPipeline, logCompactionEvent } from '@ebb/compaction';
import { loadConfig, parseConfig, resolveChannel } from '@ebb/config';
import {
  ChannelCompactor,
  chatMessageTokens,
  measureMessage,
  TRUNCATION_MARKER,
  UNCALIBRATED,
} from '@ebb/core';
import { freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { afterAll, expect, it, vi } from 'vitest';
import { watchConfig } from '../../src/commands/reload.js';

const SECRETS = { OPENAI_API_KEY: 'sk-test-SECRET-4711', DB_PASSWORD: 'hunter2-SECRET' };
const lines: string[] = [];
const logger = createLogger({
  level: 'info',
  destination: new Writable({
    write(chunk, _encoding, done) {
      lines.push(
        ...String(chunk)
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  }),
});
const events = (name: string) => lines.map((l) => JSON.parse(l)).filter((l) => l.event === name);
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  // Bounded, so a service left down by a failing test cannot hold the run.
  for (const close of closers.reverse()) {
    await Promise.race([close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 3_000))]);
  }
}, 30_000);

it('logs one JSON line per compaction step and reload, with the documented fields, and no secrets', async () => {
  const fake = await FakeOpenAiServer.start({ apiKey: SECRETS.OPENAI_API_KEY });
  closers.push(() => fake.close());
  fake.reply(() => ({ json: { summary: 'Ana shipped v2.', memories: [] } }));
  const target = new URL(testDatabaseUrl());
  const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
  closers.push(() => proxy.close());
  // Trust auth ignores the password; it is here to show it never reaches a log line.
  const url = new URL(testDatabaseUrl());
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  url.password = SECRETS.DB_PASSWORD;
  const fresh = await freshSchemaDb({ databaseUrl: url.toString() });
  closers.push(async () => {
    proxy.restore();
    await fresh.close();
  });

  const config = parseConfig(
    `[llm]\ncontext_window = 4000\nmax_output_tokens = 300\nbase_url = "${fake.url}"\n[compaction]\nsummary_max_tokens = 250\nprotect_recent = 4\ncooldown_seconds = 0\n[memory]\nrecall_max_tokens = 150\n`,
    'log-test.toml',
  );
  const onEvent = (e: Parameters<typeof logCompactionEvent>[1]) => logCompactionEvent(logger, e);
  const pipeline = createEmbeddedPipeline({
    config: () => config,
    env: { OPENAI_API_KEY: SECRETS.OPENAI_API_KEY },
    database: fresh.database,
    onEvent,
    logger,
    retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
    sleep: async () => {},
  });
  closers.push(() => pipeline.close());
  const tokenizer = await loadTokenizer('o200k_base');
  const channel = resolveChannel(config, 'web:logs');
  const settings = {
    policy: channel.compaction,
    tokenizer,
    contextWindow: 4000,
    maxOutputTokens: 300,
    reservedTokens: chatMessageTokens(tokenizer, channel.bot.systemPrompt) + 150,
  };
  // A channel at human pace (a message every 10 s): passes start at their thresholds.
  let clock = Date.now();
  const compactor = new ChannelCompactor({
    channels: pipeline.channels,
    runs: pipeline.runs,
    queue: pipeline.queue,
    markerTokens: chatMessageTokens(tokenizer, TRUNCATION_MARKER),
    onEvent,
    now: () => clock,
  });
  const say = async (text: string) => {
    clock += 10_000;
    const { entry, archivedTokens } = measureMessage(
      { seq: 0, role: 'user', author: 'ana', text },
      tokenizer,
      1_000,
    );
    await pipeline.channels.append('web:logs', {
      ...entry,
      tokens: archivedTokens,
      contextTokens: entry.tokens,
    });
    return compactor.afterTurn(
      'web:logs',
      await pipeline.channels.loadContext('web:logs'),
      settings,
      UNCALIBRATED,
    );
  };

  // A background pass.
  let jobId: string | undefined;
  for (let i = 0; i < 300 && !jobId; i++) jobId = (await say(`update ${i}: service ${i} is green`)).jobId;
  await pipeline.queue.drain();
  const [triggered] = events('compaction.triggered');
  expect(triggered).toMatchObject({
    level: 30,
    event: 'compaction.triggered',
    channel: 'web:logs',
    tier: 'background',
    msg: 'compaction.triggered',
  });
  expect(triggered.usage).toBeGreaterThanOrEqual(0.8);
  expect(triggered.projectedUsage).toBeGreaterThanOrEqual(triggered.usage);
  expect(events('compaction.enqueued')[0]).toMatchObject({
    event: 'compaction.enqueued',
    channel: 'web:logs',
    tier: 'background',
    jobId,
    fromSeq: 1,
  });
  expect(events('compaction.started')[0]).toMatchObject({
    event: 'compaction.started',
    channel: 'web:logs',
    tier: 'background',
    jobId,
  });
  const completed = events('compaction.completed')[0];
  expect(
    Object.keys(completed)
      .filter((k) => !['level', 'time', 'pid', 'hostname', 'msg'].includes(k))
      .sort(),
  ).toEqual(
    [
      'cachedInputTokens',
      'channel',
      'costUsd',
      'durationMs',
      'event',
      'fallback',
      'fromSeq',
      'inputTokens',
      'jobId',
      'memoriesAdded',
      'messagesCompacted',
      'model',
      'outputTokens',
      'summaryTokens',
      'tier',
      'toSeq',
      'tokensAfter',
      'tokensBefore',
    ].sort(),
  );
  // What wrote the summary and its calls; this config prices no model, so the cost is unknown.
  expect(completed).toMatchObject({
    tier: 'background',
    jobId,
    fallback: false,
    model: resolveChannel(config, 'web:logs').compaction.summarizerModel,
    costUsd: null,
    memoriesAdded: 0,
  });
  expect(completed.inputTokens).toBeGreaterThan(0);
  expect(completed.outputTokens).toBeGreaterThan(0);
  expect(completed.tokensAfter).toBeLessThan(completed.tokensBefore);

  // An emergency truncation.
  for (let i = 0; i < 40 && events('compaction.emergency').length === 0; i++) {
    await say(`paste ${i}: ${'ERROR pool exhausted request_id=7 '.repeat(80)}`);
  }
  const emergency = events('compaction.emergency')[0];
  expect(emergency).toMatchObject({
    event: 'compaction.emergency',
    channel: 'web:logs',
    tier: 'emergency',
    fromSeq: expect.any(Number),
  });
  expect(emergency.tokensAfter).toBeLessThan(emergency.tokensBefore);
  expect(emergency.messagesCompacted).toBeGreaterThan(0);
  await pipeline.queue.drain();

  // A failed pass: Postgres goes away under a queued pass.
  proxy.cut();
  await pipeline.queue.enqueue({
    channelKey: 'web:logs',
    tier: 'background',
    fromSeq: 1,
    toSeq: 2,
    generation: 0,
  });
  await vi.waitFor(() => expect(events('compaction.failed').length).toBeGreaterThan(0), { timeout: 20_000 });
  await pipeline.queue.drain();
  expect(events('compaction.failed')[0]).toMatchObject({
    level: 40,
    event: 'compaction.failed',
    channel: 'web:logs',
    error: 'db_unavailable',
  });
  proxy.restore();
  // The pool recovers: the store answers again.
  expect((await pipeline.channels.loadPrefix('web:logs')).headSeq).toBeGreaterThan(0);

  // A rejected reload.
  const dir = mkdtempSync(join(tmpdir(), 'ebb-logs-'));
  const file = join(dir, 'config.toml');
  writeFileSync(file, '[compaction]\nbackground_threshold = 0.7\n');
  const reloading = watchConfig(await loadConfig({ path: file }), logger);
  try {
    writeFileSync(file, '[compaction]\nbackground_threshold = 0.9\n');
    await vi.waitFor(() => expect(events('config.rejected')).toHaveLength(1));
  } finally {
    reloading.stop();
  }
  expect(events('config.rejected')[0]).toMatchObject({
    level: 50,
    event: 'config.rejected',
    error: expect.stringContaining('compaction.background_threshold: must be below aggressive_threshold'),
  });

  // The naming rule, on every line: an event is `area.verb`, and the channel is always `channel`.
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(parsed.length).toBeGreaterThan(5);
  expect(parsed.filter((l) => l.event === undefined)).toEqual([]);
  for (const line of parsed) expect(line.event).toMatch(/^[a-z]+(\.[a-z_]+)+$/);
  expect(parsed.filter((l) => 'channelKey' in l)).toEqual([]);
  expect(parsed.filter((l) => l.channel !== undefined && !String(l.channel).includes(':'))).toEqual([]);

  // No secret from the environment anywhere, and no message text at info level.
  const all = lines.join('\n');
  expect(all).not.toContain(SECRETS.OPENAI_API_KEY);
  expect(all).not.toContain(SECRETS.DB_PASSWORD);
  expect(all).not.toContain('service 3 is green');
  expect(all).not.toContain('pool exhausted');
}, 60_000);
