/**
 * A channel whose bursts the default thresholds cannot absorb in a small window (8,000 tokens) when
 * passes take about 7 s: 2,400 short messages in bursts of 600 at 16 a second, 10 s apart (about a
 * third of the window per pass). `ebb simulate --suggest` finds settings with 0 emergencies for it.
 * The config file prices the chat and summarizer models, so the search ranks by cost.
 */
import type { NewMessage, RunStore, TurnLog } from '@ebb/core';
import { random } from '../src/demo/synthetic-transcript.js';

export const BURSTY_CONFIG = [
  '[llm]',
  'model = "gpt-5.4-mini"',
  'context_window = 8000',
  'max_output_tokens = 1000',
  '[compaction]',
  'summarizer_model = "gpt-5.4-nano"',
  '[prices."gpt-5.4-mini"]',
  'input_per_mtok = 0.75',
  'cached_input_per_mtok = 0.075',
  'output_per_mtok = 4.5',
  '[prices."gpt-5.4-nano"]',
  'input_per_mtok = 0.2',
  'cached_input_per_mtok = 0.02',
  'output_per_mtok = 1.25',
].join('\n');

/** Recorded pass durations: 6.5 s to 7.4 s (p90 7.3 s). */
export const BURSTY_PASS_MS = Array.from({ length: 10 }, (_, i) => 6_500 + 100 * i);

/** `count` short messages from one person (`hello 0`, `hello 1`, …): a quiet channel's traffic. */
export async function sayHello(channels: Pick<TurnLog, 'append'>, key: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++)
    await channels.append(key, {
      role: 'user',
      author: 'ana',
      text: `hello ${i}`,
      tokens: 0,
      contextTokens: 0,
    });
}

/** Completed passes of `key` that took `durationsMs`, as the bot records them (what a replay's pass seconds are read from). */
export async function recordPasses(
  runs: Pick<RunStore, 'create' | 'finish'>,
  key: string,
  durationsMs: readonly number[],
): Promise<void> {
  for (const [i, durationMs] of durationsMs.entries()) {
    const jobId = `${key}-run-${i}`;
    await runs.create({
      jobId,
      channelKey: key,
      tier: 'aggressive',
      usage: 0.85,
      fromSeq: 1,
      toSeq: 2,
      generation: 0,
    });
    await runs.finish(jobId, { status: 'completed', durationMs });
  }
}

const WORDS = [
  'apt',
  'grub',
  'kernel',
  'install',
  'boot',
  'driver',
  'xorg',
  'partition',
  'sudo',
  'the',
  'it',
  'works',
];

export function burstyTraffic(): NewMessage[] {
  const next = random(27);
  let t = Date.parse('2026-11-20T09:00:00Z');
  const out: NewMessage[] = [];
  for (let i = 0; i < 2_400; i++) {
    t += i > 0 && i % 600 === 0 ? 10_000 : 1000 / 16;
    const length = 4 + Math.floor(next() * 16);
    const text = Array.from({ length }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ');
    out.push({
      role: 'user',
      author: `u${i % 7}`,
      text,
      ts: new Date(t).toISOString(),
      tokens: 0,
      contextTokens: 0,
    });
  }
  return out;
}
