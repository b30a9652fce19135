import type { Tool } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { runToolCall } from './run-tool-call.js';
import { MAX_TOOL_RESULT_CHARS } from './tool-text.js';

const options = { channelKey: 'web:a', timeoutMs: 200, available: ['echo'] };

function tool(call: Tool['call']): Tool {
  return { spec: { name: 'echo', description: 'echo', parameters: { type: 'object' } }, call };
}

const echo = tool(async (args, context) => ({
  text: `${JSON.stringify(args)} in ${context.channelKey}`,
  isError: false,
}));

describe('runToolCall', () => {
  it('passes the parsed arguments and the channel to the tool', async () => {
    const report = await runToolCall(echo, { id: 'c1', name: 'echo', arguments: '{"text":"hi"}' }, options);
    expect(report).toMatchObject({
      status: 'ok',
      outcome: { text: '{"text":"hi"} in web:a', isError: false },
    });
    // Empty arguments are an empty object (some models send "" for a tool without parameters).
    expect((await runToolCall(echo, { id: 'c2', name: 'echo', arguments: '' }, options)).outcome.text).toBe(
      '{} in web:a',
    );
  });

  it('answers an unknown tool with the names the model may call', async () => {
    const report = await runToolCall(
      undefined,
      { id: 'c1', name: 'github.delete_repo', arguments: '{}' },
      options,
    );
    expect(report.status).toBe('unknown_tool');
    expect(report.outcome).toEqual({
      text: 'There is no tool named github.delete_repo here. The tools you can call are: echo.',
      isError: true,
    });
  });

  it.each([
    ['{"text": "unterminated', /^The arguments for echo are not valid JSON \(.+\); send them again/],
    ['["a"]', /^The arguments for echo are not a JSON object; send them again/],
    ['42', /are not a JSON object/],
  ])('answers arguments %s with a sentence, without calling the tool', async (args, expected) => {
    let called = false;
    const watched = tool(async () => {
      called = true;
      return { text: '', isError: false };
    });
    const report = await runToolCall(watched, { id: 'c1', name: 'echo', arguments: args }, options);
    expect([report.status, report.outcome.isError, called]).toEqual(['bad_arguments', true, false]);
    expect(report.outcome.text).toMatch(expected);
  });

  it('turns a thrown error into an error outcome', async () => {
    const throwing = tool(async () => {
      throw new Error('socket hang up\n    at stack frames the model never sees');
    });
    const report = await runToolCall(throwing, { id: 'c1', name: 'echo', arguments: '{}' }, options);
    expect(report).toMatchObject({
      status: 'error',
      outcome: { text: 'The tool echo failed: socket hang up.', isError: true },
    });
  });

  it('cancels a call past the timeout, even one that ignores its signal', async () => {
    let signal: AbortSignal | undefined;
    const hanging = tool((_args, context) => {
      signal = context.signal;
      return new Promise(() => {});
    });
    const report = await runToolCall(hanging, { id: 'c1', name: 'echo', arguments: '{}' }, options);
    expect(report.status).toBe('timeout');
    expect(report.outcome).toEqual({
      text: 'The tool echo did not answer within 0.2 s and was cancelled. Go on without its result, or try once more later.',
      isError: true,
    });
    expect(signal?.aborted).toBe(true);
  });

  it('cancels a call when the bot stops (its signal), even one that ignores the signal', async () => {
    const stopping = new AbortController();
    const hanging = tool(() => new Promise(() => {}));
    const running = runToolCall(
      hanging,
      { id: 'c1', name: 'echo', arguments: '{}' },
      {
        ...options,
        timeoutMs: 60_000,
        signal: stopping.signal,
      },
    );
    stopping.abort();
    expect(await running).toMatchObject({
      status: 'cancelled',
      outcome: { text: 'The call to echo was cancelled because the bot is stopping.', isError: true },
    });
  });

  it('keeps the isError a tool reports', async () => {
    const failing = tool(async () => ({ text: 'no such issue', isError: true }));
    const report = await runToolCall(failing, { id: 'c1', name: 'echo', arguments: '{}' }, options);
    expect(report).toMatchObject({ status: 'error', outcome: { text: 'no such issue', isError: true } });
  });

  it('cuts a giant result to MAX_TOOL_RESULT_CHARS, ending in a note of what was left out', async () => {
    const giant = tool(async () => ({ text: 'x'.repeat(5_000_000), isError: false }));
    const { outcome } = await runToolCall(giant, { id: 'c1', name: 'echo', arguments: '{}' }, options);
    expect(outcome.text.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
    expect(outcome.text.length).toBeGreaterThan(MAX_TOOL_RESULT_CHARS - 200);
    const note = /\n\n\[([\d,]+) of 5,000,000 characters left out: the result was too long\]$/.exec(
      outcome.text,
    );
    const [whole = '', left = ''] = note ?? [];
    const kept = outcome.text.length - whole.length;
    expect(Number(left.replaceAll(',', ''))).toBe(5_000_000 - kept);
    expect(outcome.text.slice(0, kept)).toBe('x'.repeat(kept));
  });

  it('removes hidden characters from every outcome, a tool’s and its own sentences', async () => {
    const hiding = tool(async () => ({
      // A bidi override, a zero-width space, tag characters spelling "hi", a CRLF and a NUL.
      text: 'safe\u202Etxt.exe\u200B \u{E0068}\u{E0069}ok\r\nnext\u0000',
      isError: false,
    }));
    const { outcome } = await runToolCall(hiding, { id: 'c1', name: 'echo', arguments: '{}' }, options);
    expect(outcome.text).toBe('safetxt.exe ok\nnext');
    const unknown = await runToolCall(
      undefined,
      { id: 'c1', name: `ev\u200Bil${'n'.repeat(200_000)}`, arguments: '{}' },
      options,
    );
    expect(unknown.outcome.text).toMatch(/^There is no tool named evilnnn/);
    expect(unknown.outcome.text.length).toBeLessThanOrEqual(MAX_TOOL_RESULT_CHARS);
  });
});
