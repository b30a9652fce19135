/**
 * `ebb transcript`: prints a synthetic transcript as JSON Lines (see demo/synthetic-transcript.ts;
 * with `tools`, demo/tool-transcript.ts).
 */
import { syntheticTranscript } from '../demo/synthetic-transcript.js';
import { toolTranscript } from '../demo/tool-transcript.js';
import type { CommandIo } from './io.js';

export interface TranscriptArgs {
  readonly messages: number;
  readonly seed: number;
  /** The tool-heavy transcript. */
  readonly tools?: boolean;
  /** Users' long log pastes: on in the plain transcript, off in the tool one unless asked for. */
  readonly logPastes?: boolean;
}

export function transcript(args: TranscriptArgs, io: CommandIo): number {
  let batch: string[] = [];
  const source = args.tools ? toolTranscript : syntheticTranscript;
  const options = args.logPastes === undefined ? {} : { logPastes: args.logPastes };
  for (const message of source(args.messages, args.seed, options)) {
    batch.push(JSON.stringify(message));
    if (batch.length === 1000) {
      io.out(batch.join('\n'));
      batch = [];
    }
  }
  if (batch.length > 0) io.out(batch.join('\n'));
  return 0;
}
