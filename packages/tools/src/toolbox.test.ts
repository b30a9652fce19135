/** The toolbox over in-memory tools: what a channel is offered, and the warning when it allows too many. */
import type { Tool } from '@ebb/core';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { describe, expect, it } from 'vitest';
import { Toolbox } from './toolbox.js';

function tool(name: string): Tool {
  return {
    spec: { name, description: name, parameters: { type: 'object' } },
    call: async () => ({ text: name, isError: false }),
  };
}

const builtIns = [tool('search_history'), tool('read_history')];
const mcpTools = Array.from({ length: 300 }, (_, i) => tool(`big.t${String(i).padStart(3, '0')}`));

describe('Toolbox', () => {
  it('offers built-ins first and at most 128 tools, warning once which were left out', async () => {
    const logger = new RecordingLogger();
    const toolbox = new Toolbox({ builtIns, mcp: { tools: () => mcpTools }, logger });
    const tools = toolbox.forChannel('web:a', ['*']);
    expect(tools.specs).toHaveLength(128);
    expect(tools.specs.slice(0, 3).map((s) => s.name)).toEqual([
      'search_history',
      'read_history',
      'big.t000',
    ]);
    expect(tools.specs.at(-1)?.name).toBe('big.t125');
    // A tool left out is unknown to the model, as one it may not use.
    const left = await tools.call({ id: 'c1', name: 'big.t200', arguments: '{}' }, { timeoutMs: 1_000 });
    expect(left.status).toBe('unknown_tool');

    // Every turn takes the tools again: the same trim is said once, not per turn.
    toolbox.forChannel('web:a', ['*']);
    toolbox.forChannel('web:b', ['*']);
    expect(logger.events('tools.trimmed').map((e) => e.fields)).toEqual([
      expect.objectContaining({ channel: 'web:a', allowed: 302, offered: 128, leftOut: 174 }),
    ]);
    expect(logger.events('tools.trimmed')[0]?.fields.leftOutTools).toEqual(
      mcpTools.slice(126, 146).map((t) => t.spec.name),
    );
    // A channel within the limit is offered all it allows, without a warning.
    expect(toolbox.forChannel('web:c', ['big.t0*']).specs).toHaveLength(100);
    expect(logger.events('tools.trimmed')).toHaveLength(1);
  });
});
