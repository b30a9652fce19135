import { describe, expect, it } from 'vitest';
import { msg, summary, toolCall, toolResult, truncated } from '../../test/builders.js';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { WorkingContext } from '../model/working-context.js';
import {
  CONTINUATION_NOTE,
  REFERENCE_RULE,
  renderContext,
  spanTokens,
  systemPromptTokens,
  TRUNCATION_MARKER,
} from './render-context.js';

describe('renderContext', () => {
  it('renders system prompt, spans, raw messages, then the memories, with a continuation note', () => {
    const ctx = new WorkingContext({
      spans: [summary(1, 10, 40), truncated(11, 20)],
      raw: [
        msg(21, 5, { author: 'ana', text: 'ship it?' }),
        toolCall(22, 5, ['c1']),
        toolResult(23, 5, 'c1'),
        msg(24, 5, { role: 'assistant', author: 'ebb', text: 'Shipped.' }),
      ],
    });
    const out = renderContext({
      systemPrompt: 'You are Ebb.',
      memories: [
        {
          id: 'm1',
          type: 'decision',
          text: 'Deploys on Tuesdays',
          importance: 0.9,
          speaker: 'ana',
          scope: 'web:1',
          fromSeq: 3,
          toSeq: 3,
        },
      ],
      context: ctx.view(),
    });
    expect(out.map((m) => m.role)).toEqual([
      'system',
      'user',
      'user',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    expect(out[0]).toEqual({ role: 'system', content: `You are Ebb.\n\n${REFERENCE_RULE}` });
    expect(out[1]?.content).toMatch(/^<ebb-summary messages="#1–#10">\nsummary 1\.\.10\n<\/ebb-summary>\n\n/);
    expect(out[1]?.content.endsWith(CONTINUATION_NOTE)).toBe(true);
    expect(out[2]?.content).toBe(TRUNCATION_MARKER);
    expect(out[3]).toEqual({ role: 'user', content: 'ana: ship it?' });
    expect(out[4]).toMatchObject({
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup' } }],
    });
    expect(out[5]).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    expect(out[7]?.content).toBe(
      '<ebb-memories of="this channel">\n- (decision, ana) Deploys on Tuesdays\n</ebb-memories>',
    );
  });

  it('counts a span as the chat message it renders to', () => {
    const tokenizer = new CharTokenizer();
    const span = summary(1, 10, 0);
    const rendered = renderContext({
      systemPrompt: '',
      memories: [],
      context: new WorkingContext({ spans: [span] }).view(),
    });
    expect(spanTokens(tokenizer, span)).toBe(tokenizer.count(rendered[1]?.content ?? '') + 4);
  });

  it('counts the system message as rendered', () => {
    const tokenizer = new CharTokenizer();
    for (const systemPrompt of ['You are Ebb.', '']) {
      const [system] = renderContext({ systemPrompt, memories: [], context: new WorkingContext().view() });
      expect(systemPromptTokens(tokenizer, systemPrompt)).toBe(tokenizer.count(system?.content ?? '') + 4);
    }
  });

  it('never sends a call without its result, nor a result without its call', () => {
    // The store failed after archiving the call of seq 2 (no result), and a call of seq 4 has one
    // answered call of two.
    const ctx = new WorkingContext({
      raw: [
        msg(1, 5, { author: 'ana', text: 'build?' }),
        { ...toolCall(2, 5, ['lost']), text: '' },
        msg(3, 5, { author: 'ana', text: 'again?' }),
        { ...toolCall(4, 5, ['ok', 'missing']), text: 'checking' },
        toolResult(5, 5, 'ok'),
        toolResult(6, 5, 'stray'),
        msg(7, 5, { role: 'assistant', author: 'ebb', text: 'Green.' }),
      ],
    });
    const out = renderContext({ systemPrompt: '', memories: [], context: ctx.view() });
    expect(out.slice(1)).toEqual([
      { role: 'user', content: 'ana: build?' },
      { role: 'user', content: 'ana: again?' },
      {
        role: 'assistant',
        content: 'checking',
        tool_calls: [{ id: 'ok', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
      },
      { role: 'tool', content: 'message 5', tool_call_id: 'ok' },
      { role: 'assistant', content: 'Green.' },
    ]);
  });
});
