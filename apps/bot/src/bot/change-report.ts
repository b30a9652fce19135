/**
 * What one deletion or edit did (`ChangeReport`), as `MessageChanges` (`message-changes.ts`) reports
 * it for the log line and the metrics, and what the platform is answered from it (`changeResult`).
 * Pure (no I/O): types and the mapping only.
 */
import type { MessageChange, MessageChangeResult } from '@ebb/core';

/** What one change did, for the log line, the metrics and the platform's answer. */
export interface ChangeReport {
  readonly kind: MessageChange['kind'];
  /** `applied`; `ignored` by the channel's `[privacy]` policy; `unknown`: the archive never held it; `unchanged`: applied before. */
  readonly outcome: 'applied' | 'ignored' | 'unknown' | 'unchanged';
  /** Archived messages overwritten (the deleted ones, the bot's replies and copies; the edited one). */
  readonly messages: number;
  readonly replies: number;
  /** The history tools' results (and the rest of their turns) among them that had quoted a taken-back message. */
  readonly copies: number;
  /** Of those, copies raw in the context that changed with them. */
  readonly raw: number;
  readonly memories: number;
  readonly checkpoints: number;
  /** Active summaries set aside, still to be written again by the take-back's runner. */
  readonly summaries: number;
  /** The take-backs recorded (the change's, and one for replies derived from what it dropped). */
  readonly takeBacks: readonly string[];
}

/** A report's counts when the change reached nothing. */
export const NOTHING = {
  messages: 0,
  replies: 0,
  copies: 0,
  raw: 0,
  memories: 0,
  checkpoints: 0,
  summaries: 0,
  takeBacks: [],
} as const satisfies Omit<ChangeReport, 'kind' | 'outcome'>;

/** What the platform is answered (the web API's DELETE/PUT shows it): counts, never text. */
export function changeResult(report: ChangeReport): MessageChangeResult {
  return {
    outcome: report.outcome,
    ...(report.takeBacks[0] === undefined ? {} : { takeBack: report.takeBacks[0] }),
    ...(report.outcome === 'applied'
      ? {
          reached: {
            messages: report.messages,
            memories: report.memories,
            checkpoints: report.checkpoints,
            summaries: report.summaries,
          },
          pending: report.summaries,
        }
      : {}),
  };
}
