/**
 * What the end-to-end tests check of a channel's passes (its `compaction_runs`): each started no
 * sooner than `decideAfterTurn` allows (at the background threshold, or earlier, down to the
 * early-start floor, when the channel's pace said a later pass would land too late, as it does when
 * these tests post at full speed), and the traffic reached the tiers it must.
 */
import { type CompactionPolicy, type CompactionRun, earlyStartFloor, type Tier } from '@ebb/core';
import { expect } from 'vitest';

export function expectRunsAtTheirThresholds(
  runs: readonly CompactionRun[],
  policy: CompactionPolicy,
  tiers: readonly Tier[],
): void {
  for (const tier of tiers) expect(runs.some((r) => r.tier === tier)).toBe(true);
  expect(runs.some((r) => r.tier !== 'emergency')).toBe(true);
  for (const run of runs) {
    if (run.tier !== 'emergency') expect(run.usage).toBeGreaterThanOrEqual(earlyStartFloor(policy));
  }
}

/**
 * Emergency truncations the running bot counted (its `/metrics`). A truncation is not always a run
 * of its own: a pass whose range covers the marker replaces it with a real summary, so no heal runs.
 */
export async function emergencyTruncations(webUrl: string): Promise<number> {
  const text = await (await fetch(`${webUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('ebb_emergency_truncations_total '));
  return Number(line?.split(' ')[1] ?? 0);
}
