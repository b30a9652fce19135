/**
 * The prompt a provider can cache: between two compaction events, a channel's next prompt is its
 * previous one, up to the recalled memories, with the new messages after it, whatever was recalled
 * on either turn. A tool call and its results are archived together, so a prompt is only ever cut
 * between whole steps.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { msg, summary, toolCall, toolResult, truncated } from '../../test/builders.js';
import type { Memory } from '../memory/memory.js';
import type { ContextMessage } from '../model/model.js';
import { WorkingContext } from '../model/working-context.js';
import { renderContext } from './render-context.js';

/** A step as the bot archives it: a message, or a tool call with all its results. */
const step = fc.oneof(
  fc.record({ kind: fc.constant('user' as const), text: fc.string() }),
  fc.record({ kind: fc.constant('assistant' as const), text: fc.string() }),
  fc.record({ kind: fc.constant('tools' as const), calls: fc.integer({ min: 1, max: 3 }) }),
);
type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

function messagesOf(steps: readonly Step[], firstSeq: number): ContextMessage[] {
  const out: ContextMessage[] = [];
  let seq = firstSeq;
  steps.forEach((s, i) => {
    if (s.kind === 'tools') {
      const ids = Array.from({ length: s.calls }, (_, c) => `call_${i}_${c}`);
      out.push(toolCall(seq++, 5, ids));
      for (const id of ids) out.push(toolResult(seq++, 5, id));
    } else {
      out.push(msg(seq++, 5, { role: s.kind, text: s.text, author: s.kind === 'user' ? 'ana' : 'ebb' }));
    }
  });
  return out;
}

const memories = fc.array(
  fc.record({ text: fc.string({ minLength: 1 }), importance: fc.double({ min: 0, max: 1, noNaN: true }) }),
  { maxLength: 4 },
);
const asMemories = (recalled: readonly { text: string; importance: number }[]): Memory[] =>
  recalled.map((m, i) => ({ id: `m${i}`, type: 'fact', scope: 'web:x', fromSeq: 1, toSeq: 1, ...m }));

describe('the prompt between two compaction events', () => {
  test.prop([
    fc.array(step, { maxLength: 12 }),
    fc.array(step, { minLength: 1, maxLength: 6 }),
    memories,
    memories,
  ])(
    'is the previous prompt, without its memories, then the new messages',
    (before, after, recalledBefore, recalledAfter) => {
      const spans = [summary(1, 10, 40), truncated(11, 20)];
      const earlier = messagesOf(before, 21);
      const all = [...earlier, ...messagesOf(after, 21 + earlier.length)];
      const previous = renderContext({
        systemPrompt: 'You are Ebb.',
        memories: asMemories(recalledBefore),
        context: new WorkingContext({ spans, raw: earlier }).view(),
      });
      const next = renderContext({
        systemPrompt: 'You are Ebb.',
        memories: asMemories(recalledAfter),
        context: new WorkingContext({ spans, raw: all }).view(),
      });
      const stable = recalledBefore.length > 0 ? previous.slice(0, -1) : previous;
      expect(next.slice(0, stable.length)).toEqual(stable);
      expect(next.length).toBeGreaterThan(stable.length);
    },
  );
});
