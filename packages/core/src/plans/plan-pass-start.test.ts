import { describe, expect, it } from 'vitest';
import type { CompactionRun } from '../ports/ports.js';
import {
  circuitOpen,
  DEFAULT_CIRCUIT_BREAKER,
  FOLLOW_UP_MAX_WAIT_MS,
  passCanWait,
  passRunFigures,
  waitsForPredecessor,
} from './plan-pass-start.js';

const run = (jobId: string, fields: Partial<CompactionRun>): CompactionRun => ({
  jobId,
  channelKey: 'web:c',
  tier: 'background',
  status: 'failed',
  usage: 0.8,
  fromSeq: 1,
  toSeq: 10,
  generation: 0,
  attempts: 1,
  ...fields,
});
const breaker = DEFAULT_CIRCUIT_BREAKER;
const now = 1_000_000_000;

describe('circuitOpen', () => {
  it('opens after three attempted passes in a row failed, until the pause after the newest', () => {
    const failed = [1, 2, 3].map((i) => run(`f${i}`, { finishedAt: now - i * 1_000 }));
    expect(circuitOpen(failed, 'next', breaker, now)).toBe(true);
    expect(circuitOpen(failed, 'next', breaker, now - 1_000 + breaker.pauseMs)).toBe(false);
    // Two are not enough; the job's own run does not count.
    expect(circuitOpen(failed.slice(0, 2), 'next', breaker, now)).toBe(false);
    expect(circuitOpen(failed, 'f1', breaker, now)).toBe(false);
  });

  it('counts a fallback the LLM forced as failed, skips skipped runs, and closes on a success', () => {
    const fallback = run('b', {
      status: 'completed',
      fallback: true,
      error: 'llm_timeout',
      finishedAt: now - 1,
    });
    const skipped = run('s', { status: 'skipped', finishedAt: now });
    const failed = [2, 3].map((i) => run(`f${i}`, { finishedAt: now - i * 1_000 }));
    expect(circuitOpen([skipped, fallback, ...failed], 'next', breaker, now)).toBe(true);
    const success = run('ok', { status: 'completed', finishedAt: now - 500 });
    expect(circuitOpen([success, fallback, ...failed], 'next', breaker, now)).toBe(false);
  });
});

describe('waitsForPredecessor', () => {
  it('waits while the pass ahead is queued or running, and never past the longest wait', () => {
    const followUp = { after: 'head' };
    expect(waitsForPredecessor(followUp, run('head', { status: 'running' }), now, now + 1)).toBe(true);
    expect(waitsForPredecessor(followUp, run('head', { status: 'queued' }), now, now + 1)).toBe(true);
    expect(waitsForPredecessor(followUp, run('head', { status: 'completed' }), now, now + 1)).toBe(false);
    expect(waitsForPredecessor(followUp, undefined, now, now + 1)).toBe(false);
    expect(
      waitsForPredecessor(followUp, run('head', { status: 'running' }), now, now + FOLLOW_UP_MAX_WAIT_MS + 1),
    ).toBe(false);
    expect(waitsForPredecessor({}, run('head', { status: 'running' }), now, now + 1)).toBe(false);
  });
});

describe('passCanWait', () => {
  it('lets only a background pass with tries left wait for the LLM', () => {
    expect(passCanWait({ tier: 'background', lastAttempt: false })).toBe(true);
    expect(passCanWait({ tier: 'background', lastAttempt: true })).toBe(false);
    expect(passCanWait({ tier: 'background' })).toBe(false);
    expect(passCanWait({ tier: 'aggressive', lastAttempt: false })).toBe(false);
  });
});

describe('passRunFigures', () => {
  const call = (inputTokens: number, outputTokens: number, error?: string) => ({
    purpose: 'summary' as const,
    model: 'm',
    inputTokens,
    outputTokens,
    durationMs: 1,
    attempts: 1,
    ...(error === undefined ? {} : { error }),
  });
  const figures = { summaryTokens: 40, memoriesAdded: 2, durationMs: 900 };

  it('sums the calls and keeps the fallback’s cause as the error the breaker counts', () => {
    const calls = [call(100, 0, 'llm_timeout'), call(50, 20)];
    const fallback = passRunFigures({ model: 'extractive', fallback: true, calls }, figures);
    expect(fallback).toEqual({
      model: 'extractive',
      fallback: true,
      error: 'llm_timeout',
      inputTokens: 150,
      outputTokens: 20,
      ...figures,
    });
    const passes = ['b1', 'b2', 'b3'].map((id) =>
      run(id, { status: 'completed', finishedAt: now, ...fallback }),
    );
    expect(circuitOpen(passes, 'next', breaker, now)).toBe(true);
  });

  it('records no error for a summary the LLM wrote, even after a failed call', () => {
    const calls = [call(100, 0, 'llm_timeout'), call(50, 20)];
    expect(passRunFigures({ model: 'm', fallback: false, calls }, figures)).not.toHaveProperty('error');
  });
});
