import { describe, expect, it } from 'vitest';
import { value } from '../test/exposition.js';
import { createMetrics } from './metrics.js';

describe('tool metrics', () => {
  it('counts tool calls by tool and outcome and observes their duration, with bounded labels', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.onToolCall({ tool: 'github.search_issues', status: 'ok', durationMs: 120 });
    metrics.onToolCall({ tool: 'github.search_issues', status: 'timeout', durationMs: 30_000 });
    metrics.onToolCall({ tool: 'search_history', status: 'ok', durationMs: 4 });
    // A name no label should carry, and a status outside the list.
    metrics.onToolCall({ tool: 'has spaces and {braces}', status: 'weird', durationMs: 1 });
    const text = await metrics.metricsText();
    const calls = (tool: string, outcome: string) => value(text, 'ebb_tool_calls_total', { tool, outcome });
    expect(calls('github.search_issues', 'ok')).toBe(1);
    expect(calls('github.search_issues', 'timeout')).toBe(1);
    expect(calls('search_history', 'ok')).toBe(1);
    expect(calls('other', 'error')).toBe(1);
    expect(value(text, 'ebb_tool_call_duration_seconds_count', { tool: 'github.search_issues' })).toBe(2);
    expect(value(text, 'ebb_tool_call_duration_seconds_sum', { tool: 'github.search_issues' })).toBeCloseTo(
      30.12,
    );
  });
});
