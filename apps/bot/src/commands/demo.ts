/**
 * `ebb demo` (what `npm start` runs until the bot lands): a synthetic busy channel replayed through
 * the compaction core with the shipped config, so a newcomer sees the cycle without any setup.
 */
import { syntheticTranscript } from '../demo/synthetic-transcript.js';
import type { CommandIo } from './io.js';
import { replay } from './simulate.js';

export async function demo(args: { messages: number; config?: string }, io: CommandIo): Promise<number> {
  io.out(
    `Ebb demo: ${args.messages} synthetic team-chat messages replayed through the compaction core.\n` +
      'Tune thresholds in config.toml, then replay your own transcript with `npx ebb simulate FILE`.\n',
  );
  return replay(
    syntheticTranscript(args.messages),
    args.config === undefined ? {} : { config: args.config },
    io,
  );
}
