import { describe, expect, it } from 'vitest';
import type { CompactionRun, JobState } from '../ports/ports.js';
import { planReconcile, type ReconcilePolicy } from './plan-reconcile.js';

const policy: ReconcilePolicy = { missingGraceMs: 1_000, graceMs: 4_000, requeueWithinMs: 10_000 };
const NOW = 100_000;

function runOf(fields: Partial<CompactionRun> = {}): CompactionRun {
  return {
    jobId: 'web%3Aa.background.g3.s1-40',
    channelKey: 'web:a',
    tier: 'background',
    status: 'running',
    usage: 0.81,
    fromSeq: 1,
    toSeq: 40,
    generation: 3,
    attempts: 1,
    createdAt: NOW - 5_000,
    ...fields,
  };
}

describe('planReconcile', () => {
  it('leaves a run whose job is waiting or held by a worker', () => {
    for (const job of ['pending', 'active'] as const satisfies JobState[]) {
      expect(planReconcile(runOf(), job, NOW, policy)).toEqual({ kind: 'leave' });
    }
  });

  it('leaves a run younger than the grace period, whatever its job', () => {
    for (const job of ['missing', 'failed', 'completed'] as const satisfies JobState[]) {
      expect(planReconcile(runOf({ createdAt: NOW - 999 }), job, NOW, policy)).toEqual({ kind: 'leave' });
    }
  });

  it('acts on a missing job soon, and leaves a failed or completed one to the worker for longer', () => {
    const young = runOf({ createdAt: NOW - 1_000 });
    expect(planReconcile(young, 'missing', NOW, policy)).toMatchObject({ kind: 'requeue' });
    for (const job of ['failed', 'completed'] as const satisfies JobState[]) {
      expect(planReconcile(young, job, NOW, policy)).toEqual({ kind: 'leave' });
      expect(planReconcile(runOf({ createdAt: NOW - 4_000 }), job, NOW, policy)).toMatchObject({
        kind: 'finish',
      });
    }
  });

  it('enqueues a lost job again with its focus and the pass it follows', () => {
    const run = runOf({ focus: 'the deploy plan', after: 'web%3Aa.background.g3.s1-20', fromSeq: 21 });
    expect(planReconcile(run, 'missing', NOW, policy)).toEqual({
      kind: 'requeue',
      job: {
        channelKey: 'web:a',
        tier: 'background',
        fromSeq: 21,
        toSeq: 40,
        generation: 3,
        focus: 'the deploy plan',
        after: 'web%3Aa.background.g3.s1-20',
      },
    });
  });

  it('leaves a finished run, whatever its job', () => {
    for (const status of ['completed', 'failed', 'stale', 'skipped'] as const) {
      expect(planReconcile(runOf({ status }), 'missing', NOW, policy)).toEqual({ kind: 'leave' });
    }
  });

  it('enqueues the same range and generation again when the job is missing', () => {
    for (const status of ['queued', 'running'] as const) {
      expect(planReconcile(runOf({ status, tier: 'aggressive' }), 'missing', NOW, policy)).toEqual({
        kind: 'requeue',
        job: { channelKey: 'web:a', tier: 'aggressive', fromSeq: 1, toSeq: 40, generation: 3 },
      });
    }
  });

  it('marks a run stale when its job went missing longer ago than a requeue is worth', () => {
    expect(planReconcile(runOf({ createdAt: NOW - 10_000 }), 'missing', NOW, policy)).toEqual({
      kind: 'finish',
      status: 'stale',
      reason: 'job_lost',
    });
  });

  it('marks a run failed when its job failed for good, and stale when it completed unrecorded', () => {
    expect(planReconcile(runOf(), 'failed', NOW, policy)).toEqual({
      kind: 'finish',
      status: 'failed',
      reason: 'job_failed',
    });
    expect(planReconcile(runOf({ status: 'queued' }), 'completed', NOW, policy)).toEqual({
      kind: 'finish',
      status: 'stale',
      reason: 'job_completed_unrecorded',
    });
  });

  it('treats a run without a creation time as old', () => {
    const { createdAt: _, ...run } = runOf();
    expect(planReconcile(run, 'missing', NOW, policy)).toMatchObject({ kind: 'finish', reason: 'job_lost' });
  });
});
