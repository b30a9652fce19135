import { describe, expect, it } from 'vitest';
import { value } from '../test/exposition.js';
import { createMetrics } from './metrics.js';

describe('message change metrics', () => {
  it('counts deletions and edits by platform, kind and outcome, and what the applied ones reached', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const none = { messages: 0, replies: 0, memories: 0, summaries: 0 };
    metrics.onMessageChange({
      platform: 'slack',
      kind: 'deleted',
      outcome: 'applied',
      messages: 3,
      replies: 1,
      memories: 2,
      summaries: 1,
    });
    metrics.onMessageChange({ platform: 'slack', kind: 'deleted', outcome: 'unknown', ...none });
    metrics.onMessageChange({ platform: 'web', kind: 'edited', outcome: 'applied', ...none, messages: 1 });
    metrics.onMessageChange({ platform: 'irc', kind: 'edited', outcome: 'ignored', ...none });
    const text = await metrics.metricsText();
    const changes = (platform: string, kind: string, outcome: string) =>
      value(text, 'ebb_message_changes_total', { platform, kind, outcome });
    expect(changes('slack', 'deleted', 'applied')).toBe(1);
    expect(changes('slack', 'deleted', 'unknown')).toBe(1);
    expect(changes('web', 'edited', 'applied')).toBe(1);
    // A platform outside the closed set is no new series.
    expect(changes('other', 'edited', 'ignored')).toBe(1);
    const reached = (kind: string, part: string) =>
      value(text, 'ebb_message_change_redactions_total', { kind, part });
    expect(reached('deleted', 'messages')).toBe(3);
    expect(reached('deleted', 'replies')).toBe(1);
    expect(reached('deleted', 'memories')).toBe(2);
    expect(reached('deleted', 'summaries')).toBe(1);
    expect(reached('edited', 'messages')).toBe(1);
  });

  it('counts what retention took back, without a channel label', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.onRetention({ channel: 'slack:T1:C1', messages: 120 });
    metrics.onRetention({ channel: 'web:ops', messages: 3 });
    const text = await metrics.metricsText();
    expect(value(text, 'ebb_retention_sweeps_total', {})).toBe(2);
    expect(value(text, 'ebb_retention_messages_total', {})).toBe(123);
    expect(text).not.toContain('slack:T1:C1');
  });
});
