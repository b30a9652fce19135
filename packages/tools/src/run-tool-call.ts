/**
 * One tool call of the model, carried out so that it cannot throw at the turn: arguments that are
 * not a JSON object, a name the channel has no tool for, a tool that throws or takes longer than
 * the per-call timeout each become an `isError` outcome in a sentence the model can act on. The
 * status says which, for the `tool.called` log line and `ebb_tool_calls_total`.
 *
 * Every outcome's text, whatever gave it, leaves here bounded and visible (`tool-text.ts`): a tool
 * may answer with megabytes, or with characters a reader cannot see, and the text goes on to the
 * archive, the model and the tokenizer on the event loop.
 */
import { errorText, type Tool, type ToolCall, type ToolOutcome } from '@ebb/core';
import { boundedToolText } from './tool-text.js';

export type ToolCallStatus = 'ok' | 'error' | 'timeout' | 'cancelled' | 'unknown_tool' | 'bad_arguments';

export interface ToolCallReport {
  readonly outcome: ToolOutcome;
  readonly status: ToolCallStatus;
  readonly durationMs: number;
}

export interface RunToolCallOptions {
  readonly channelKey: string;
  readonly timeoutMs: number;
  /** Aborted when the bot stops: the call is cancelled too. */
  readonly signal?: AbortSignal;
  /** Names the model may call, for the answer to an unknown one. */
  readonly available: readonly string[];
}

export async function runToolCall(
  tool: Tool | undefined,
  call: ToolCall,
  options: RunToolCallOptions,
): Promise<ToolCallReport> {
  const started = performance.now();
  const report = (status: ToolCallStatus, outcome: ToolOutcome): ToolCallReport => ({
    outcome: { text: boundedToolText(outcome.text), isError: outcome.isError },
    status,
    durationMs: performance.now() - started,
  });
  if (tool === undefined) {
    const names = options.available.length > 0 ? options.available.join(', ') : 'none';
    return report(
      'unknown_tool',
      failed(`There is no tool named ${call.name} here. The tools you can call are: ${names}.`),
    );
  }
  const args = parseArguments(call.arguments);
  if (typeof args === 'string') {
    return report(
      'bad_arguments',
      failed(
        `The arguments for ${call.name} ${args}; send them again as one JSON object that follows its schema.`,
      ),
    );
  }
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const outcome = await untilAborted(tool.call(args, { channelKey: options.channelKey, signal }), signal);
    if (timeout.aborted) return timedOut();
    return report(outcome.isError ? 'error' : 'ok', outcome);
  } catch (err) {
    if (timeout.aborted) return timedOut();
    if (signal.aborted)
      return report(
        'cancelled',
        failed(`The call to ${call.name} was cancelled because the bot is stopping.`),
      );
    return report('error', failed(`The tool ${call.name} failed: ${errorText(err)}.`));
  }

  function timedOut(): ToolCallReport {
    const seconds = Math.round(options.timeoutMs / 100) / 10;
    return report(
      'timeout',
      failed(
        `The tool ${call.name} did not answer within ${seconds} s and was cancelled. Go on without its result, or try once more later.`,
      ),
    );
  }
}

function failed(text: string): ToolOutcome {
  return { text, isError: true };
}

/** The arguments object, or why it is not one (the model sends a JSON string; empty means `{}`). */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return `are not valid JSON (${errorText(err)})`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'are not a JSON object';
  return parsed as Record<string, unknown>;
}

/** Settles with `work`, or rejects as soon as `signal` aborts: a tool that ignores its signal is still bounded. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
