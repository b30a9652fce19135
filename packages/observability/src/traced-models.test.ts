/**
 * Ebb's model spans on the wire: the real `OpenAiChatModel` and openai client against the fake
 * OpenAI server, traced by the real SDK, exported over OTLP/HTTP to the test collector, which
 * decodes them with the protocol's definitions. What arrives is what a Tempo or a Langfuse would get.
 */
import { Writable } from 'node:stream';
import { OpenAiChatModel, openAiClient } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { FakeOtlpCollector, type RecordedSpan } from '@ebb/testing/otlp';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { trace } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { tracedChatModel } from './traced-models.js';
import { startTracing } from './tracing.js';

// Words that must never reach a span: they are only in the prompt and in the reply.
const PROMPT_WORD = 'zebra-prompt-7f3a';
const REPLY_WORD = 'okapi-reply-91bc';
// Long enough for the fake's prompt cache (1,024 tokens at 4 characters each), so a repeat is served from it.
const PROMPT = `ana: ${PROMPT_WORD} ${'the deploy failed again on the staging cluster. '.repeat(100)}`;

let collector: FakeOtlpCollector;
let openai: FakeOpenAiServer;
beforeAll(async () => {
  [collector, openai] = await Promise.all([FakeOtlpCollector.start(), FakeOpenAiServer.start()]);
});
afterAll(() => Promise.all([collector.close(), openai.close()]));
beforeEach(() => {
  collector.reset();
  openai.reset();
});

function chatModel(retries = 1) {
  const model = new OpenAiChatModel({
    client: openAiClient({ apiKey: 'test', baseUrl: openai.url }),
    model: 'gpt-4o-mini',
    maxOutputTokens: 100,
    retry: { attempts: retries, initialDelayMs: 1, maxDelayMs: 1, maxRetryAfterMs: 10 },
  });
  return tracedChatModel(model, { baseUrl: openai.url });
}

/** Runs `work` with tracing on, then shuts tracing down, which sends every span to the collector. */
async function traced<T>(work: () => Promise<T>): Promise<T> {
  const tracing = await startTracing(
    { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'ebb-test' },
    new RecordingLogger(),
  );
  try {
    return await work();
  } finally {
    await tracing.shutdown();
  }
}

/** Every string a span carries: name, attributes, events, status, resource. */
function everything(spans: readonly RecordedSpan[]): string {
  return JSON.stringify(spans, (_key, value) => (typeof value === 'bigint' ? String(value) : value));
}

describe('tracedChatModel', () => {
  it('sends one CLIENT span per reply in the GenAI conventions, a child of the active span, with no message text', async () => {
    openai.reply({ content: `It is the ${REPLY_WORD}.`, model: 'gpt-4o-mini-2024-07-18' });
    const model = chatModel();
    const messages = [{ role: 'user' as const, content: PROMPT }];
    const { turnId, replies } = await traced(() =>
      trace.getTracer('test').startActiveSpan('turn', async (turn) => {
        const first = await model.reply(messages, { channelKey: 'web:tracing' });
        const second = await model.reply(messages, { channelKey: 'web:tracing' });
        turn.end();
        return { turnId: turn.spanContext(), replies: [first, second] };
      }),
    );
    expect(replies[0]?.text).toContain(REPLY_WORD);
    // The repeat was served from the prompt cache, so the cached count is there to see.
    expect(replies[1]?.cachedPromptTokens).toBeGreaterThan(0);

    const chats = collector.spans.filter((s) => s.name === 'chat gpt-4o-mini');
    expect(chats).toHaveLength(2);
    const { port } = new URL(openai.url);
    chats.forEach((span, i) => {
      const reply = replies[i];
      expect(span).toMatchObject({
        kind: 'client',
        traceId: turnId.traceId,
        parentSpanId: turnId.spanId,
        status: { code: 'unset' },
        resource: { 'service.name': 'ebb-test' },
        scope: { name: '@ebb/observability' },
      });
      // Exactly these attributes: nothing else, so nothing of the text either.
      expect(span.attributes).toEqual({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
        'gen_ai.response.finish_reasons': ['stop'],
        'gen_ai.usage.input_tokens': reply?.promptTokens,
        'gen_ai.usage.cache_read.input_tokens': reply?.cachedPromptTokens,
        'gen_ai.usage.output_tokens': reply?.completionTokens,
        'server.address': '127.0.0.1',
        'server.port': Number(port),
      });
    });
    expect(chats[0]?.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(1_024);
    expect(chats[1]?.attributes['gen_ai.usage.cache_read.input_tokens']).toBeGreaterThan(0);
    const sent = everything(collector.spans);
    expect(sent).toContain('gpt-4o-mini-2024-07-18');
    expect(sent).not.toContain(PROMPT_WORD);
    expect(sent).not.toContain(REPLY_WORD);
  });

  it('marks a failed reply an error by its code alone, with the tries a retry hid', async () => {
    openai.fail({ kind: 'rate_limit', retryAfterMs: 1 }, { times: 1 });
    openai.fail({ kind: 'invalid_api_key' }, { times: 1 });
    const model = chatModel(3);
    const failure = await traced(() =>
      model.reply([{ role: 'user', content: `ana: ${PROMPT_WORD}` }]).then(
        () => undefined,
        (err: unknown) => err as { code: string },
      ),
    );
    expect(failure?.code).toMatch(/^llm_/);
    const span = await collector.waitForSpan('chat gpt-4o-mini');
    expect(span.status).toEqual({ code: 'error', message: failure?.code });
    expect(span.attributes).toMatchObject({
      'error.type': failure?.code,
      'ebb.llm.failed_tries': ['llm_rate_limited', failure?.code],
    });
    expect(span.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
    expect(everything(collector.spans)).not.toContain(PROMPT_WORD);
  });

  it('puts the ids of the active span on the log lines written inside it, and none outside', async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        done();
      },
    });
    const log = createLogger({ destination }).child({ channel: 'web:tracing' });
    const model = chatModel();
    const spanId = await traced(() =>
      trace.getTracer('test').startActiveSpan('turn', async (turn) => {
        await model.reply([{ role: 'user', content: 'ana: hi' }]);
        // After an awaited HTTP call: the context followed the async work.
        log.info({ event: 'turn.answered' }, 'answered');
        turn.end();
        return turn.spanContext().spanId;
      }),
    );
    log.info({ event: 'turn.idle' }, 'idle');
    const turn = collector.spans.find((s) => s.spanId === spanId);
    expect(turn).toBeDefined();
    expect(lines[0]).toMatchObject({
      event: 'turn.answered',
      trace_id: turn?.traceId,
      span_id: turn?.spanId,
    });
    expect(lines[1]).toMatchObject({ event: 'turn.idle' });
    expect(lines[1]).not.toHaveProperty('trace_id');
    expect(lines[1]).not.toHaveProperty('span_id');
  });
});
