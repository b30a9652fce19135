import { promptCacheKey } from '@ebb/llm';
import { InlineCompactionQueue } from '@ebb/queue';
import { recordSpans } from '@ebb/testing/span-recorder';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { traceTurn } from './turn-spans.js';

const spans = recordSpans();
afterAll(() => spans.stop());
beforeEach(() => spans.clear());

const message = { channelKey: 'slack:T1:C9', platform: 'slack' };
const outcome = (result: { failed?: boolean }) => ({ archived: 'stored', answered: true, ...result });

describe('the turn span', () => {
  it("starts the trace as a SERVER span when nothing brought it (a gateway's or a socket's message)", async () => {
    await traceTurn(message, outcome, async () => ({}));
    const [turn] = spans.ended;
    expect(turn?.name).toBe('ebb turn');
    expect(turn?.kind).toBe(SpanKind.SERVER);
    expect(turn?.parentSpanContext).toBeUndefined();
    expect(turn?.attributes).toEqual({
      'ebb.channel.hash': expect.stringMatching(/^ebb-[0-9a-f]{24}$/),
      'ebb.platform': 'slack',
      'ebb.turn.archived': 'stored',
      'ebb.turn.answered': true,
    });
    expect(JSON.stringify(turn?.attributes)).not.toContain('C9');
  });

  it("is a step (INTERNAL) of the HTTP request's span that brought it", async () => {
    const request = trace.getTracer('test').startSpan('POST /api/channels/:id/messages');
    await context.with(trace.setSpan(context.active(), request), () =>
      traceTurn(message, outcome, async () => ({})),
    );
    request.end();
    const turn = spans.ended.find((s) => s.name === 'ebb turn');
    expect(turn?.kind).toBe(SpanKind.INTERNAL);
    expect(turn?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  });

  it('is an error when the turn failed after keeping the message, or threw', async () => {
    await traceTurn(message, outcome, async () => ({ failed: true }));
    await expect(
      traceTurn(message, outcome, async () => Promise.reject(new Error('store down'))),
    ).rejects.toThrow('store down');
    expect(spans.ended.map((s) => s.status)).toEqual([
      { code: SpanStatusCode.ERROR, message: 'turn_failed' },
      { code: SpanStatusCode.ERROR, message: 'turn_threw' },
    ]);
  });

  it("names the channel by the same hash as the passes it queues, and as the provider's cache key", async () => {
    await traceTurn(message, outcome, async () => ({}));
    const queue = new InlineCompactionQueue({ processor: async () => undefined });
    await queue.enqueue({
      channelKey: message.channelKey,
      tier: 'background',
      fromSeq: 1,
      toSeq: 9,
      generation: 2,
    });
    await queue.drain();
    await queue.close();
    const [turn, passSpan] = spans.ended;
    expect(turn?.attributes['ebb.channel.hash']).toBe(promptCacheKey(message.channelKey));
    expect(passSpan?.attributes).toMatchObject({
      'ebb.channel.hash': promptCacheKey(message.channelKey),
      'messaging.message.id': `${promptCacheKey(message.channelKey)}.background.g2.s1-9`,
    });
  });
});
