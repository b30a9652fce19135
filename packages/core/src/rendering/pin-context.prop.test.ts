/**
 * A pinned prompt holds every message up to the turn's own and the turn's own tool steps, nothing
 * archived later by anyone else, and counts exactly the tokens of what it holds.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { ContextMessage, ContextView } from '../model/model.js';
import { pinContext } from './pin-context.js';
import { renderContext } from './render-context.js';

function message(seq: number, tokens: number, role: ContextMessage['role'] = 'user'): ContextMessage {
  return { seq, role, author: role === 'user' ? 'ana' : 'ebb', text: `m${seq}`, tokens };
}

function viewOf(raw: ContextMessage[], spanTokens = 0): ContextView {
  const rawTokens = raw.reduce((sum, m) => sum + m.tokens, 0);
  return { generation: 1, headSeq: raw.at(-1)?.seq ?? 0, spans: [], raw, tokens: spanTokens + rawTokens };
}

const raws = fc
  .array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 30 })
  .map((tokens) => tokens.map((t, i) => message(i + 1, t)));

describe('pinContext', () => {
  test.prop([raws, fc.nat(), fc.array(fc.nat(), { maxLength: 5 }), fc.integer({ min: 0, max: 500 })])(
    'keeps up to the pin and the steps, and counts what it keeps',
    (raw, at, stepPicks, spanTokens) => {
      const view = viewOf(raw, spanTokens);
      const seq = (at % raw.length) + 1;
      const steps = new Set(stepPicks.map((p) => seq + 1 + (p % 3)));
      const pinned = pinContext(view, { seq, steps });
      for (const m of raw) {
        const expected = m.seq <= seq || steps.has(m.seq);
        expect(pinned.raw.includes(m)).toBe(expected);
      }
      expect(pinned.tokens).toBe(spanTokens + pinned.raw.reduce((sum, m) => sum + m.tokens, 0));
      expect(pinned.raw.map((m) => m.seq)).toEqual([...pinned.raw.map((m) => m.seq)].sort((a, b) => a - b));
    },
  );

  it('renders the message being answered last, before a later message of another turn', () => {
    const raw = [message(1, 5), message(2, 5), message(3, 5)];
    const rendered = renderContext({
      systemPrompt: '',
      memories: [],
      context: pinContext(viewOf(raw), { seq: 2, steps: new Set() }),
    });
    expect(rendered.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('m2') });
    expect(JSON.stringify(rendered)).not.toContain('m3');
  });

  it('keeps the tool results the turn archived, and leaves microcompaction their seqs', () => {
    const raw = [message(1, 5), message(2, 5), message(3, 5, 'assistant'), message(4, 5, 'tool')];
    const view = { ...viewOf(raw), toolResultSeqs: [4] };
    const pinned = pinContext(view, { seq: 1, steps: new Set([3, 4]) });
    expect(pinned.raw.map((m) => m.seq)).toEqual([1, 3, 4]);
    expect(pinned.toolResultSeqs).toEqual([4]);
    expect(pinContext(view, { seq: 1, steps: new Set() }).toolResultSeqs).toEqual([]);
  });

  it('is the view itself when nothing came later', () => {
    const view = viewOf([message(1, 5), message(2, 5)]);
    expect(pinContext(view, { seq: 2, steps: new Set() })).toBe(view);
  });
});
