/** A `CommandIo` that keeps what a command printed, for assertions. */
import type { CommandIo } from '../src/commands/io.js';

export function captureIo(): CommandIo & { stdout: () => string; stderr: () => string } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    stdout: () => out.join('\n'),
    stderr: () => err.join('\n'),
  };
}
