/**
 * The tool-call metrics (`ebb_tool_*`): calls by tool and outcome, and their duration. The tool
 * label is bounded by the configured servers' tools: the bot names a tool the model made up
 * `unknown`, and a name that is no safe label value is counted as `other`.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { boundedLabel, seconds } from './metric-values.js';

export interface ToolCallSample {
  /** The tool's name (`search_history`, `github.search_issues`); `unknown` for one the model made up. */
  readonly tool: string;
  /**
   * `ok`, `error` (the tool or its server failed), `timeout`, `cancelled` (the bot stopped during
   * the call), `unknown_tool`, `bad_arguments`.
   */
  readonly status: string;
  readonly durationMs: number;
}

/** A tool call is a local lookup or a remote server's work: milliseconds to the 600 s bound. */
export const TOOL_DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 600] as const;

const TOOL_OUTCOMES: ReadonlySet<string> = new Set([
  'ok',
  'error',
  'timeout',
  'cancelled',
  'unknown_tool',
  'bad_arguments',
]);

/** Registers the `ebb_tool_*` series in `registers`; the recorder it returns counts one call. */
export function toolMetrics(registers: Registry[]): (call: ToolCallSample) => void {
  const toolCalls = new Counter({
    name: 'ebb_tool_calls_total',
    help: 'Tool calls of the model, by tool and outcome (ok, error, timeout, cancelled, unknown_tool, bad_arguments).',
    labelNames: ['tool', 'outcome'] as const,
    registers,
  });
  const toolDuration = new Histogram({
    name: 'ebb_tool_call_duration_seconds',
    help: 'Duration of tool calls, from the call to its outcome (a timeout counts its full bound).',
    labelNames: ['tool'] as const,
    buckets: [...TOOL_DURATION_BUCKETS],
    registers,
  });

  return (call) => {
    const tool = boundedLabel(call.tool);
    // A status outside the list is a failure we did not name, not a new series.
    toolCalls.inc({ tool, outcome: TOOL_OUTCOMES.has(call.status) ? call.status : 'error' });
    toolDuration.observe({ tool }, seconds(call.durationMs));
  };
}
