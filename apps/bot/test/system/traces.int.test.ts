/**
 * Traces across processes, on the wire: `ebb start` and `ebb worker` in processes of their own, each
 * exporting OTLP/HTTP to a test collector that decodes the protobuf (`@ebb/testing/otlp`), on the
 * real Postgres and Redis with the fake OpenAI server. The web message that queues a pass gives one
 * trace: the HTTP request, its turn (`ebb turn`), the turn's model call in the GenAI conventions and
 * its Postgres and Redis calls, and in the worker the pass (`ebb compaction pass`, its queue wait),
 * its summarizer, the summarizer's model call and its Postgres calls. No span carries a message's
 * text.
 */
import { freshSchemaDb } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { FakeOtlpCollector, type RecordedSpan } from '@ebb/testing/otlp';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type SpawnedWorker, spawnEbbWorker } from '../../../../workers/compaction/test/spawn-ebb-worker.js';
import { isPassRequest, passReply, smallWindowToml } from '../small-window.js';
import { type SpawnedEbb, spawnEbb } from '../spawn-ebb.js';

/** Every name and text the test sends starts with `zqz`, so no span may hold the letters. */
const SECRET = 'zqztrace the staging password is hunter2';
const CHANNEL = 'zqzroom';
const AUTHOR = 'zqzana';

let collector: FakeOtlpCollector;
let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
const prefix = randomPrefix();
let bot: SpawnedEbb | undefined;
let worker: SpawnedWorker | undefined;

beforeAll(async () => {
  collector = await FakeOtlpCollector.start();
  fake = await FakeOpenAiServer.start();
  fake.reply(
    (request) =>
      passReply(request, { summary: 'Earlier: a long paste of errors.', memories: [] }) ?? {
        content: 'noted',
      },
  );
  fresh = await freshSchemaDb();
  // Spans leave in batches: a short delay, so the test does not wait out the SDK's 5 s default.
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '200' };
  const toml = smallWindowToml(fake.url, ['[web.bot]', 'respond_to = "all"']);
  worker = await spawnEbbWorker({ databaseUrl: fresh.url, prefix, configToml: toml, env });
  bot = await spawnEbb({ schema: fresh.schema, prefix, fakeUrl: fake.url }, { configToml: toml, env });
}, 90_000);

afterAll(async () => {
  for (const child of [bot?.child, worker?.child]) child?.kill('SIGTERM');
  await Promise.all([bot?.exited, worker?.exited]);
  await dropPrefix(prefix);
  await fresh?.close();
  await fake?.close();
  await collector?.close();
}, 60_000);

async function post(text: string): Promise<void> {
  const res = await fetch(`${bot?.url}/api/channels/${CHANNEL}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: AUTHOR, text }),
  });
  expect(res.status).toBe(200);
}

const childOf = (parent: RecordedSpan) => (s: RecordedSpan) =>
  s.traceId === parent.traceId && s.parentSpanId === parent.spanId;

/** Whether `span` is below `ancestor` in its trace (among the spans received so far). */
function descendsFrom(span: RecordedSpan, ancestor: RecordedSpan): boolean {
  if (span.traceId !== ancestor.traceId) return false;
  const byId = new Map(collector.spans.map((s) => [s.spanId, s]));
  let parentId = span.parentSpanId;
  while (parentId !== undefined) {
    if (parentId === ancestor.spanId) return true;
    parentId = byId.get(parentId)?.parentSpanId;
  }
  return false;
}

it('puts a turn, its model call and the pass it queued, run in the worker, in one trace', async () => {
  await post(SECRET);
  // Pastes until one queues a pass and the worker asks the model for its summary (a 4,000-token
  // window: about a dozen).
  for (let i = 0; i < 40 && !fake.completionRequests.some(isPassRequest); i++) {
    await post(`paste ${i}: ${'ERROR upstream reset request_id=12345 attempt=3 '.repeat(25)}`);
  }
  const pass = await collector.waitForSpan('ebb compaction pass', 30_000);
  expect(pass).toMatchObject({ kind: 'consumer', resource: { 'service.name': 'ebb-worker' } });
  expect(pass.attributes).toMatchObject({ 'messaging.system': 'bullmq', 'ebb.compaction.attempt': 1 });
  expect(['background', 'aggressive', 'emergency']).toContain(pass.attributes['ebb.compaction.tier']);
  expect(Number(pass.attributes['ebb.compaction.queue_wait_ms'])).toBeGreaterThanOrEqual(0);

  // Its parent is the turn that queued it, in the bot's process.
  const turn = await collector.waitForSpan(
    (s) => s.spanId === pass.parentSpanId && s.traceId === pass.traceId,
  );
  expect(turn).toMatchObject({ name: 'ebb turn', kind: 'internal', resource: { 'service.name': 'ebb' } });
  // Under the span of the HTTP request that posted the message, named by its route, not its path.
  const request = await collector.waitForSpan((s) => s.spanId === turn.parentSpanId);
  expect(request).toMatchObject({
    name: 'POST /api/channels/:id/messages',
    kind: 'server',
    attributes: {
      'http.request.method': 'POST',
      'http.route': '/api/channels/:id/messages',
      'http.response.status_code': 200,
    },
  });
  expect(request.parentSpanId).toBeUndefined();
  expect(turn.attributes).toMatchObject({
    'ebb.platform': 'web',
    'ebb.channel.hash': expect.stringMatching(/^ebb-[0-9a-f]{24}$/),
    'ebb.turn.archived': 'stored',
    'ebb.turn.answered': true,
  });
  // The turn's model call.
  const reply = await collector.waitForSpan((s) => childOf(turn)(s) && s.name.startsWith('chat '));
  expect(reply).toMatchObject({ name: 'chat gpt-5.4-mini', kind: 'client' });
  expect(reply.attributes).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-5.4-mini',
    'gen_ai.response.finish_reasons': ['stop'],
  });
  expect(Number(reply.attributes['gen_ai.usage.input_tokens'])).toBeGreaterThan(0);
  expect(Number(reply.attributes['gen_ai.usage.output_tokens'])).toBeGreaterThan(0);
  // The pass's summarizer and its model call, then its memories and its splice.
  const summarize = await collector.waitForSpan((s) => childOf(pass)(s) && s.name === 'ebb summarize');
  const memories = await collector.waitForSpan((s) => childOf(pass)(s) && s.name === 'ebb memories');
  expect(memories.attributes).toMatchObject({ 'ebb.memories.added': 0 });
  const splice = await collector.waitForSpan((s) => childOf(pass)(s) && s.name === 'ebb splice');
  expect(['splice', 'stale', 'gap', 'noop']).toContain(splice.attributes['ebb.splice.outcome']);
  expect(Number(splice.attributes['ebb.splice.summary_tokens'])).toBeGreaterThan(0);
  const summaryCall = await collector.waitForSpan((s) => childOf(summarize)(s) && s.name.startsWith('chat '));
  expect(summaryCall).toMatchObject({ name: 'chat gpt-5.4-mini', kind: 'client' });
  expect(summaryCall.attributes).toMatchObject({
    'ebb.llm.purpose': 'summary',
    'gen_ai.operation.name': 'chat',
  });
  expect(Number(summaryCall.attributes['gen_ai.usage.input_tokens'])).toBeGreaterThan(0);

  // Postgres and Redis, through OpenTelemetry's instrumentations, in both processes.
  const inTurn = await collector.waitForSpan(
    (s) => descendsFrom(s, turn) && s.attributes['db.system.name'] === 'postgresql',
  );
  expect(inTurn).toMatchObject({ kind: 'client', scope: { name: '@opentelemetry/instrumentation-pg' } });
  const redisInTurn = await collector.waitForSpan(
    (s) => descendsFrom(s, turn) && s.attributes['db.system.name'] === 'redis',
  );
  expect(redisInTurn).toMatchObject({
    kind: 'client',
    scope: { name: '@opentelemetry/instrumentation-ioredis' },
  });
  const inPass = await collector.waitForSpan(
    (s) => descendsFrom(s, pass) && s.attributes['db.system.name'] === 'postgresql',
  );
  expect(inPass.resource['service.name']).toBe('ebb-worker');
  const databaseSpans = collector.spans.filter((s) => s.attributes['db.system.name'] !== undefined);
  for (const span of databaseSpans) {
    // Only calls made inside a trace: the queue's polls and the lease renewals make no traces of their own.
    expect(span.parentSpanId).toBeDefined();
    // A Redis command by its name alone (a key names a channel; a value may be a message).
    if (span.attributes['db.system.name'] === 'redis') {
      expect(span.attributes['db.query.text']).toMatch(/^[A-Z]+$/);
    }
  }

  // Logs lead to the trace: the bot's lines of that turn carry its ids.
  const turnLines = (bot?.stderr() ?? '')
    .split('\n')
    .filter((l) => l.includes(`"trace_id":"${turn.traceId}"`));
  expect(turnLines.length).toBeGreaterThan(0);
  // No span, attribute or event holds what was said, who said it or where: not the text, the
  // author, the channel key (`web:zqzroom`, `web%3Azqzroom` in a job id) nor a SQL value.
  expect(JSON.stringify(collector.spans, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(
    'zqz',
  );
}, 90_000);
