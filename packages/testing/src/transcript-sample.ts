/**
 * A slice of the real #ubuntu IRC transcript kept in the repo (`packages/testing/data`, CC BY 4.0,
 * attribution in its README): 40 messages from each of 10 days between 2006-12-06 and 2007-02-15,
 * on their own times, for tests that need real chat on a real clock (retention). The whole
 * 72,000-message transcript lives beside the repo and is the benchmarks' (bench/support.ts).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface TranscriptLine {
  readonly role: 'user';
  readonly author: string;
  readonly text: string;
  /** `YYYY-MM-DDThh:mm`, UTC. */
  readonly ts: string;
}

const SAMPLE = fileURLToPath(new URL('../data/irc-ubuntu-10-days.jsonl', import.meta.url));

export function readTranscriptSample(): TranscriptLine[] {
  return readFileSync(SAMPLE, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as TranscriptLine);
}
