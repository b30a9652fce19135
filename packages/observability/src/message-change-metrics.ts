/**
 * What people took back (`ebb_message_changes_total`, `ebb_message_change_redactions_total`): the
 * deletions and edits the platforms reported, by platform, kind and outcome, and what each applied
 * one reached (archived messages rewritten, the bot's replies among them, memories dropped, summaries
 * queued to be written again). Labels are closed sets: platforms, two kinds, four outcomes, four parts.
 * And what retention took back (`retentionMetrics`).
 */
import { PLATFORMS } from '@ebb/core';
import { Counter, type Registry } from 'prom-client';
import { count } from './metric-values.js';

export interface MessageChangeSample {
  readonly platform: string;
  readonly kind: 'deleted' | 'edited';
  /** `applied`; `ignored` by `[privacy]`; `unknown` (never archived); `unchanged` (applied before). */
  readonly outcome: 'applied' | 'ignored' | 'unknown' | 'unchanged';
  readonly messages: number;
  readonly replies: number;
  readonly memories: number;
  readonly summaries: number;
}

const PARTS = ['messages', 'replies', 'memories', 'summaries'] as const;

/** Registers the series in `registers`; the recorder it returns counts one change. */
export function messageChangeMetrics(registers: Registry[]): (change: MessageChangeSample) => void {
  const changes = new Counter({
    name: 'ebb_message_changes_total',
    help: 'Deletions and edits the platforms reported, by platform, kind (deleted, edited) and outcome (applied, ignored by [privacy], unknown, unchanged).',
    labelNames: ['platform', 'kind', 'outcome'] as const,
    registers,
  });
  const redactions = new Counter({
    name: 'ebb_message_change_redactions_total',
    help: 'What applied deletions and edits reached, by kind and part: archived messages rewritten, bot replies among them, memories dropped, summaries queued to be written again.',
    labelNames: ['kind', 'part'] as const,
    registers,
  });
  const platforms: ReadonlySet<string> = new Set(PLATFORMS);

  return (change) => {
    const platform = platforms.has(change.platform) ? change.platform : 'other';
    changes.inc({ platform, kind: change.kind, outcome: change.outcome });
    for (const part of PARTS) redactions.inc({ kind: change.kind, part }, count(change[part]));
  };
}

/** One retention sweep of a channel (`RetentionSweep`'s `onSwept`). */
export interface RetentionSample {
  readonly channel: string;
  readonly messages: number;
}

/**
 * `ebb_retention_sweeps_total` and `ebb_retention_messages_total`: channels swept that lost messages,
 * and the messages taken back for being older than their channel's `retain_days`. No channel label
 * (unbounded); the channel is on the `retention.swept` line.
 */
export function retentionMetrics(registers: Registry[]): (sweep: RetentionSample) => void {
  const sweeps = new Counter({
    name: 'ebb_retention_sweeps_total',
    help: 'Channels a retention sweep took messages back from (older than their retain_days).',
    registers,
  });
  const messages = new Counter({
    name: 'ebb_retention_messages_total',
    help: "Messages taken back for being older than their channel's retain_days.",
    registers,
  });
  return (sweep) => {
    sweeps.inc();
    messages.inc(count(sweep.messages));
  };
}
