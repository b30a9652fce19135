/**
 * `ebb transcript`: prints a synthetic transcript as JSON Lines (see demo/synthetic-transcript.ts;
 * with `tools`, demo/tool-transcript.ts).
 */
import { syntheticTranscript } from '../demo/synthetic-transcript.js';
import { toolTranscript } from '../demo/tool-transcript.js';
import type { CommandIo } from './io.js';

export function transcript(args: { messages: number; seed: number; tools?: boolean }, io: CommandIo): number {
  let batch: string[] = [];
  const source = args.tools ? toolTranscript : syntheticTranscript;
  for (const message of source(args.messages, args.seed)) {
    batch.push(JSON.stringify(message));
    if (batch.length === 1000) {
      io.out(batch.join('\n'));
      batch = [];
    }
  }
  if (batch.length > 0) io.out(batch.join('\n'));
  return 0;
}
