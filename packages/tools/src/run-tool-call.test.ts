import type { Tool } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { runToolCall } from './run-tool-call.js';

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

  it('keeps the isError a tool reports', async () => {
    const failing = tool(async () => ({ text: 'no such issue', isError: true }));
    const report = await runToolCall(failing, { id: 'c1', name: 'echo', arguments: '{}' }, options);
    expect(report).toMatchObject({ status: 'error', outcome: { text: 'no such issue', isError: true } });
  });
});
