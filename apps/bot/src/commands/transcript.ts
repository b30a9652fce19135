/** `ebb transcript`: prints a synthetic transcript as JSON Lines (see demo/synthetic-transcript.ts). */
import { syntheticTranscript } from '../demo/synthetic-transcript.js';
import type { CommandIo } from './io.js';

export function transcript(args: { messages: number; seed: number }, io: CommandIo): number {
  let batch: string[] = [];
  for (const message of syntheticTranscript(args.messages, args.seed)) {
    batch.push(JSON.stringify(message));
    if (batch.length === 1000) {
      io.out(batch.join('\n'));
      batch = [];
    }
  }
  if (batch.length > 0) io.out(batch.join('\n'));
  return 0;
}
