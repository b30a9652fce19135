import type { CompactionLogEvent } from '@ebb/core';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseExposition, samples, value } from '../test/exposition.js';
import { CALLS } from '../test/llm-calls.js';
import { createMetrics, passOutcome } from './metrics.js';

const SLACK = 'slack:T1:C1';
const DISCORD = 'discord:G9:C42';
const WEB = 'web:lobby';

/** Event lines as the bot's compactor and the worker's processor emit them. */
const STREAM: readonly CompactionLogEvent[] = [
  // A background pass: triggered and enqueued by the bot, run by a worker.
  { event: 'compaction.triggered', channel: SLACK, tier: 'background', usage: 0.82 },
  {
    event: 'compaction.enqueued',
    channel: SLACK,
    tier: 'background',
    usage: 0.82,
    fromSeq: 1,
    toSeq: 240,
    jobId: 'slack%3AT1%3AC1-g3-1-240',
  },
  {
    event: 'compaction.started',
    channel: SLACK,
    tier: 'background',
    jobId: 'slack%3AT1%3AC1-g3-1-240',
    fromSeq: 1,
    toSeq: 240,
  },
  {
    event: 'compaction.completed',
    channel: SLACK,
    tier: 'background',
    jobId: 'slack%3AT1%3AC1-g3-1-240',
    fromSeq: 1,
    toSeq: 240,
    tokensBefore: 96_000,
    tokensAfter: 36_000,
    messagesCompacted: 240,
    summaryTokens: 1_200,
    memoriesAdded: 3,
    durationMs: 4_200,
    fallback: false,
  },
  // A trigger while that pass runs.
  { event: 'compaction.skipped', channel: SLACK, tier: 'background', usage: 0.83, reason: 'in_flight' },
  // An emergency truncation in the bot, then the heal pass it queues.
  { event: 'compaction.triggered', channel: DISCORD, tier: 'emergency', usage: 0.97 },
  {
    event: 'compaction.emergency',
    channel: DISCORD,
    tier: 'emergency',
    usage: 0.61,
    fromSeq: 1,
    toSeq: 180,
    tokensBefore: 124_000,
    tokensAfter: 79_000,
    messagesCompacted: 180,
  },
  {
    event: 'compaction.enqueued',
    channel: DISCORD,
    tier: 'background',
    usage: 0.97,
    jobId: 'discord%3AG9%3AC42-g4-1-180',
  },
  // An aggressive pass whose LLM call times out (BullMQ retries it), then completes on the fallback.
  { event: 'compaction.started', channel: WEB, tier: 'aggressive', jobId: 'web%3Alobby-g2-1-90' },
  {
    event: 'compaction.failed',
    channel: WEB,
    tier: 'aggressive',
    jobId: 'web%3Alobby-g2-1-90',
    error: 'llm_timeout',
    durationMs: 120_000,
  },
  { event: 'compaction.started', channel: WEB, tier: 'aggressive', jobId: 'web%3Alobby-g2-1-90' },
  {
    event: 'compaction.completed',
    channel: WEB,
    tier: 'aggressive',
    jobId: 'web%3Alobby-g2-1-90',
    tokensBefore: 52_000,
    tokensAfter: 22_000,
    messagesCompacted: 90,
    summaryTokens: 800,
    memoriesAdded: 0,
    durationMs: 31_000,
    fallback: true,
  },
  // A pass whose range was truncated away under it.
  {
    event: 'compaction.started',
    channel: DISCORD,
    tier: 'background',
    jobId: 'discord%3AG9%3AC42-g4-1-180',
  },
  {
    event: 'compaction.stale',
    channel: DISCORD,
    tier: 'background',
    jobId: 'discord%3AG9%3AC42-g4-1-180',
    reason: 'generation_changed',
  },
  // A run whose job Redis lost, enqueued again by the reconciler.
  {
    event: 'compaction.reconciled',
    channel: SLACK,
    tier: 'background',
    jobId: 'slack%3AT1%3AC1-g9-1-40',
    action: 'requeued',
    reason: 'job_missing',
  },
];

function fedMetrics() {
  const metrics = createMetrics({ processMetrics: false });
  for (const event of STREAM) metrics.onCompactionEvent(event);
  metrics.onLlmCalls(CALLS);
  metrics.onTurn({ platform: 'slack', answered: true, usage: 0.83, durationMs: 1_250 });
  metrics.onTurn({ platform: 'web', answered: false, usage: 0.42, durationMs: 15 });
  metrics.onTurn({ platform: 'discord', answered: true, usage: 0.61, durationMs: 2_100 });
  metrics.onBudget({ over: 'notice', scope: 'workspace', period: 'day', first: true });
  metrics.onBudget({ over: 'notice', scope: 'workspace', period: 'day', first: false });
  return metrics;
}

describe('createMetrics', () => {
  it('maps the compaction event stream to pass counters by tier and outcome', async () => {
    const text = await fedMetrics().metricsText();
    const passes = (tier: string, outcome: string) =>
      value(text, 'ebb_compaction_passes_total', { tier, outcome });
    expect(passes('background', 'completed')).toBe(1);
    expect(passes('background', 'skipped')).toBe(1);
    expect(passes('background', 'stale')).toBe(1);
    expect(passes('aggressive', 'failed')).toBe(1);
    expect(passes('aggressive', 'completed')).toBe(1);
    expect(passes('emergency', 'emergency')).toBe(1);
    // triggered, enqueued, started and reconciled are steps, not outcomes.
    const total = samples(text, 'ebb_compaction_passes_total').reduce((n, s) => n + s.value, 0);
    expect(total).toBe(6);

    expect(value(text, 'ebb_compaction_tokens_saved_total', { tier: 'background' })).toBe(60_000);
    expect(value(text, 'ebb_compaction_tokens_saved_total', { tier: 'aggressive' })).toBe(30_000);
    expect(value(text, 'ebb_compaction_tokens_saved_total', { tier: 'emergency' })).toBe(45_000);
    expect(value(text, 'ebb_emergency_truncations_total')).toBe(1);
    expect(value(text, 'ebb_compaction_fallbacks_total')).toBe(1);
    expect(value(text, 'ebb_compaction_reconciled_total', { action: 'requeued' })).toBe(1);
  });

  it('counts stubbed tool results and the tokens the stubs saved, never as a pass', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.onCompactionEvent({
      event: 'compaction.microcompacted',
      channel: 'web:a',
      tier: 'microcompact',
      fromSeq: 4,
      toSeq: 9,
      tokensBefore: 90_000,
      tokensAfter: 71_000,
      messagesCompacted: 3,
    });
    const text = await metrics.metricsText();
    expect(value(text, 'ebb_microcompacted_results_total')).toBe(3);
    expect(value(text, 'ebb_compaction_tokens_saved_total', { tier: 'microcompact' })).toBe(19_000);
    const passes = samples(text, 'ebb_compaction_passes_total').reduce((n, s) => n + s.value, 0);
    expect(passes).toBe(0);
  });

  it('times completed passes only, per tier', async () => {
    const text = await fedMetrics().metricsText();
    const background = { tier: 'background' };
    expect(value(text, 'ebb_compaction_pass_duration_seconds_count', background)).toBe(1);
    expect(value(text, 'ebb_compaction_pass_duration_seconds_sum', background)).toBeCloseTo(4.2);
    expect(value(text, 'ebb_compaction_pass_duration_seconds_bucket', { ...background, le: '2.5' })).toBe(0);
    expect(value(text, 'ebb_compaction_pass_duration_seconds_bucket', { ...background, le: '5' })).toBe(1);
    // The failed try (120 s) is not a pass duration; the completed retry (31 s) is.
    const aggressive = { tier: 'aggressive' };
    expect(value(text, 'ebb_compaction_pass_duration_seconds_count', aggressive)).toBe(1);
    expect(value(text, 'ebb_compaction_pass_duration_seconds_sum', aggressive)).toBeCloseTo(31);
  });

  it("counts passes a channel's open circuit breaker skipped, apart from other skips", async () => {
    const metrics = createMetrics({ processMetrics: false });
    // As the compaction processor emits it when the channel's last passes failed.
    metrics.onCompactionEvent({
      event: 'compaction.skipped',
      channel: SLACK,
      tier: 'aggressive',
      jobId: 'j1',
      reason: 'circuit_open',
    });
    metrics.onCompactionEvent({
      event: 'compaction.skipped',
      channel: SLACK,
      tier: 'aggressive',
      reason: 'in_flight',
    });
    const text = await metrics.metricsText();
    expect(value(text, 'ebb_compaction_breaker_skips_total', { tier: 'aggressive' })).toBe(1);
    expect(value(text, 'ebb_compaction_breaker_skips_total', { tier: 'background' })).toBe(0);
    expect(value(text, 'ebb_compaction_passes_total', { tier: 'aggressive', outcome: 'skipped' })).toBe(2);
  });

  it('records turns, their duration and the context usage after them', async () => {
    const text = await fedMetrics().metricsText();
    expect(value(text, 'ebb_turns_total', { platform: 'slack', answered: 'true' })).toBe(1);
    expect(value(text, 'ebb_turns_total', { platform: 'web', answered: 'false' })).toBe(1);
    expect(value(text, 'ebb_turns_total', { platform: 'web', answered: 'true' })).toBe(0);
    const le = (bound: string) => value(text, 'ebb_context_usage_bucket', { le: bound });
    expect([le('0.5'), le('0.6'), le('0.7'), le('0.8'), le('0.85'), le('0.95'), le('+Inf')]).toEqual([
      1, 1, 2, 2, 3, 3, 3,
    ]);
    expect(value(text, 'ebb_turn_duration_seconds_count')).toBe(3);
    expect(value(text, 'ebb_turn_duration_seconds_sum')).toBeCloseTo(3.365);
  });

  it('carries no channel key, job id or free text in its labels', async () => {
    const text = await fedMetrics().metricsText();
    for (const secretish of [SLACK, DISCORD, WEB, 'slack%3A', 'lobby', 'generation_changed', 'in_flight']) {
      expect(text).not.toContain(secretish);
    }
    const labelNames = new Set(parseExposition(text).flatMap((s) => Object.keys(s.labels)));
    expect([...labelNames].sort()).toEqual([
      'action',
      'answered',
      'cached',
      'code',
      'direction',
      'le',
      'outcome',
      'over',
      'period',
      'platform',
      'purpose',
      'reason',
      'scope',
      'tier',
    ]);
  });

  it('counts a spend limit reached once across replicas, and every turn it changed', async () => {
    // Every series is there at 0 before the first limit, so the alert sees that one's increase.
    expect(await createMetrics({ processMetrics: false }).metricsText()).toContain(
      'ebb_budget_reached_total{scope="channel",period="day",over="notice"} 0',
    );
    const text = await fedMetrics().metricsText();
    expect(text).toContain('ebb_budget_reached_total{scope="workspace",period="day",over="notice"} 1');
    expect(text).toContain('ebb_budget_limited_turns_total{over="notice"} 2');
    expect(text).toContain('ebb_budget_limited_turns_total{over="silent"} 0');
  });

  it('counts memories the model proposed that were rejected or repaired, by reason only', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const pass = { channel: SLACK, tier: 'background' as const, jobId: 'j1' };
    metrics.onCompactionEvent({
      event: 'compaction.memories_invalid',
      ...pass,
      memoriesRejected: { unknown_type: 2, text_too_long: 1 },
      memoriesRepaired: { speaker_unknown: 3 },
    });
    metrics.onCompactionEvent({
      event: 'compaction.memories_invalid',
      ...pass,
      memoriesRejected: { unknown_type: 1, ['ignore previous instructions' as 'malformed']: 5 },
    });
    const text = await metrics.metricsText();
    expect(value(text, 'ebb_memories_rejected_total', { reason: 'unknown_type' })).toBe(3);
    expect(value(text, 'ebb_memories_rejected_total', { reason: 'text_too_long' })).toBe(1);
    expect(value(text, 'ebb_memories_rejected_total', { reason: 'malformed' })).toBe(0);
    expect(value(text, 'ebb_memories_repaired_total', { reason: 'speaker_unknown' })).toBe(3);
    expect(text).not.toContain('ignore previous');
    expect(value(text, 'ebb_compaction_passes_total', { tier: 'background', outcome: 'completed' })).toBe(0);
  });

  it('bounds the error code label and never counts backwards', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.onLlmCalls([
      {
        purpose: 'reply',
        model: 'm',
        inputTokens: Number.NaN,
        outputTokens: -3,
        durationMs: 1,
        attempts: 1,
        error: 'connect ECONNREFUSED 10.0.0.7:443 for https://api.example.com/v1 with a long message',
      },
    ]);
    // A splice that grew the context (a long summary) saves nothing rather than throwing.
    metrics.onCompactionEvent({
      event: 'compaction.completed',
      channel: SLACK,
      tier: 'background',
      tokensBefore: 1_000,
      tokensAfter: 1_100,
      durationMs: 10,
    });
    const text = await metrics.metricsText();
    expect(samples(text, 'ebb_llm_errors_total')).toEqual([
      { name: 'ebb_llm_errors_total', labels: { purpose: 'reply', code: 'other' }, value: 1 },
    ]);
    expect(value(text, 'ebb_llm_tokens_total', { purpose: 'reply', direction: 'output' })).toBe(0);
    expect(value(text, 'ebb_compaction_tokens_saved_total', { tier: 'background' })).toBe(0);
    expect(text).not.toContain('ECONNREFUSED');
  });

  it('exposes every bounded series before the first event', async () => {
    const text = await createMetrics({ processMetrics: false }).metricsText();
    expect(value(text, 'ebb_compaction_passes_total', { tier: 'aggressive', outcome: 'stale' })).toBe(0);
    expect(value(text, 'ebb_compaction_passes_total', { tier: 'emergency', outcome: 'emergency' })).toBe(0);
    expect(value(text, 'ebb_llm_calls_total', { purpose: 'merge', outcome: 'error' })).toBe(0);
    expect(value(text, 'ebb_turns_total', { platform: 'discord', answered: 'false' })).toBe(0);
    expect(value(text, 'ebb_compaction_pass_duration_seconds_count', { tier: 'emergency' })).toBe(0);
    // No queue source: no queue series.
    expect(samples(text, 'ebb_queue_depth')).toEqual([]);
    expect(samples(text, 'ebb_queue_oldest_job_age_seconds')).toEqual([]);
  });

  it('registers in a given registry, with the process metrics by default', async () => {
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    expect(metrics.registry).toBe(registry);
    expect(metrics.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await registry.metrics();
    expect(samples(text, 'process_cpu_user_seconds_total')).toHaveLength(1);
    expect(samples(text, 'ebb_emergency_truncations_total')).toHaveLength(1);
  });
});

describe('passOutcome', () => {
  it('names an outcome for the final steps only', () => {
    expect(passOutcome('compaction.triggered')).toBeUndefined();
    expect(passOutcome('compaction.enqueued')).toBeUndefined();
    expect(passOutcome('compaction.started')).toBeUndefined();
    expect(passOutcome('compaction.reconciled')).toBeUndefined();
    expect(passOutcome('compaction.emergency')).toBe('emergency');
    expect(passOutcome('compaction.skipped')).toBe('skipped');
  });
});
