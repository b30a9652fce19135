import { describe, expect, it } from 'vitest';
import { msg, summary, toolCall, toolResult } from '../../test/builders.js';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { testPolicy } from '../../test/policy.js';
import { decideAfterTurn } from '../decision/decide-after-turn.js';
import { countersOf } from '../model/channel-counters.js';
import type { ContextMessage } from '../model/model.js';
import { WorkingContext } from '../model/working-context.js';
import {
  planMicrocompaction,
  planStubs,
  renderStub,
  type StubRequest,
  stubToolResults,
  summarizedMessage,
} from './plan-microcompaction.js';

const policy = testPolicy();

/** Five tool turns: a call at odd seqs, its 300-token result right after it. */
function toolTurns(results = 5): ContextMessage[] {
  return Array.from({ length: results }, (_, i) => [
    toolCall(2 * i + 1, 10, [`c${i}`]),
    toolResult(2 * i + 2, 300, `c${i}`),
  ]).flat();
}

describe('planMicrocompaction', () => {
  it('picks the results older than the newest keep_tool_results, oldest first', () => {
    expect(planMicrocompaction({ raw: toolTurns() }, 0.6, policy)).toEqual([2, 4]);
    expect(planMicrocompaction({ raw: toolTurns() }, 0.6, testPolicy({ keepToolResults: 0 }))).toEqual([
      2, 4, 6, 8, 10,
    ]);
  });

  it('keeps only the newest result whole at the emergency threshold', () => {
    expect(planMicrocompaction({ raw: toolTurns() }, 0.949, policy)).toEqual([2, 4]);
    expect(planMicrocompaction({ raw: toolTurns() }, 0.95, policy)).toEqual([2, 4, 6, 8]);
    expect(planMicrocompaction({ raw: toolTurns() }, 0.97, testPolicy({ keepToolResults: 0 }))).toEqual([
      2, 4, 6, 8, 10,
    ]);
  });

  it('waits for the threshold, and does nothing when switched off', () => {
    expect(planMicrocompaction({ raw: toolTurns() }, 0.59, policy)).toEqual([]);
    // A channel that lowered the background threshold below it still stubs before its passes.
    const early = testPolicy({ backgroundThreshold: 0.5, aggressiveThreshold: 0.6 });
    expect(planMicrocompaction({ raw: toolTurns() }, 0.5, early)).toEqual([2, 4]);
    expect(planMicrocompaction({ raw: toolTurns() }, 0.99, testPolicy({ microcompaction: false }))).toEqual(
      [],
    );
  });

  it('leaves results under microcompact_min_tokens, and results already stubbed, alone', () => {
    const raw = toolTurns().map((m) => (m.seq === 2 ? { ...m, tokens: 199 } : m));
    expect(planMicrocompaction({ raw: raw }, 0.7, policy)).toEqual([4]);
    const stubbed = raw.map((m) => (m.seq === 4 ? { ...m, stubbed: true as const } : m));
    expect(planMicrocompaction({ raw: stubbed }, 0.7, policy)).toEqual([]);
  });

  it('counts only tool results among the newest kept, not the messages around them', () => {
    const raw = [...toolTurns(4), ...Array.from({ length: 50 }, (_, i) => msg(9 + i, 10))];
    expect(planMicrocompaction({ raw: raw }, 0.7, policy)).toEqual([2]);
  });
});

describe('stubToolResults', () => {
  const tokenizer = new CharTokenizer();

  it('names the tool of the call, the whole size and the seq, and keeps the pairing', () => {
    const raw = [
      toolCall(1, 10, ['a']),
      { ...toolResult(2, 300, 'a'), text: '\n  {"items": [1, 2, 3]}\nmore', omittedTokens: 4_512 },
    ];
    const [stub] = stubToolResults(raw, [2], tokenizer);
    expect(stub?.text).toBe(
      '[tool result of lookup, 4,812 tokens, archived as #2: {"items": [1, 2, 3]}] Call read_history with from_seq 2 and to_seq 2 for the whole result.',
    );
    expect(stub).toMatchObject({ seq: 2, role: 'tool', toolCallId: 'a', stubbed: true });
    expect(stub?.omittedTokens).toBeUndefined();
    expect(stub?.tokens).toBeLessThan(100);
  });

  it('does not name read_history to a channel that may not call it', () => {
    const raw = [toolCall(1, 10, ['a']), toolResult(2, 300, 'a')];
    const [stub] = stubToolResults(raw, [2], tokenizer, false);
    expect(stub?.text).toMatch(/^\[tool result of lookup, 300 tokens, archived as #2: .*\]$/);
    expect(stub?.text).not.toContain('read_history');
  });

  it('cuts a long first line and drops hidden characters from it', () => {
    const result = { toolName: 't', resultTokens: 10, seq: 7 };
    const text = `${'a'.repeat(100)}\u202e\u200b`;
    expect(renderStub({ ...result, text })).toContain(`#7: ${'a'.repeat(80)}…]`);
    expect(renderStub({ ...result, text: '\u200bok\u202e' })).toContain('#7: ok]');
    expect(renderStub({ ...result, text: '   \n' })).toContain('archived as #7]');
  });
});

describe('microcompaction in the after-turn decision', () => {
  const context = (raw: ContextMessage[]) => ({
    generation: 1,
    headSeq: raw.at(-1)?.seq ?? 0,
    spans: [],
    raw,
    tokens: raw.reduce((n, m) => n + m.tokens, 0),
  });
  const input = (usage: number) => ({
    context: context(toolTurns()),
    usage,
    usagePerToken: 0.001,
    summaryTokens: 50,
    policy,
    now: 0,
    inFlight: [],
    pace: { growthPerSecond: 0, passSeconds: 10 },
    lastLandedAt: undefined,
    ineffectivePasses: 0,
  });

  it('comes before an emergency: stubbing loses nothing, a truncation sets messages aside', () => {
    expect(decideAfterTurn(input(0.97))).toEqual({ kind: 'microcompact', seqs: [2, 4, 6, 8] });
  });

  it('comes before a background pass, and not below its threshold', () => {
    expect(decideAfterTurn(input(0.82))).toEqual({ kind: 'microcompact', seqs: [2, 4] });
    expect(decideAfterTurn(input(0.5))).toEqual({ kind: 'none' });
  });
});

describe('planStubs', () => {
  // A summary over 1..4 (the first two tool turns), then three more tool turns raw, at generation 3.
  const turns = toolTurns();
  const context = new WorkingContext({ generation: 3, spans: [summary(1, 4, 40)], raw: turns.slice(4) });
  const channel = countersOf(context.view());
  const stub = (seq: number) => ({ seq, text: `[stub of #${seq}]`, tokens: 12, stubbed: true as const });
  /** What Postgres finds: the rows at the seqs, the compacted ones too. */
  const rows = turns.map((m) => ({ seq: m.seq, role: m.role, tokens: m.tokens, stubbed: false }));

  it('stubs raw tool results: the raw total moves by the difference, the generation goes up', () => {
    expect(planStubs(channel, rows, { expectedGeneration: 3, stubs: [stub(8), stub(6)] })).toEqual({
      kind: 'stub',
      copies: [
        { seq: 6, copy: { text: '[stub of #6]', tokens: 12, stubbed: true } },
        { seq: 8, copy: { text: '[stub of #8]', tokens: 12, stubbed: true } },
      ],
      generation: 4,
      rawTokens: 3 * 310 - 2 * (300 - 12),
      tokensBefore: 40 + 3 * 310,
      tokensAfter: 40 + 3 * 310 - 2 * (300 - 12),
      tokensSaved: 2 * (300 - 12),
    });
  });

  it('refuses a tool result inside the compacted prefix, though its row is still a result not stubbed', () => {
    expect(planStubs(channel, rows, { expectedGeneration: 3, stubs: [stub(6), stub(4)] })).toEqual({
      kind: 'stale',
      reason: 'seq 4 is not a raw tool result to stub',
    });
  });

  it('refuses anything but a raw tool result left to stub, named once, marked as a stub', () => {
    const refused = (stubs: StubRequest['stubs'], found = rows) =>
      planStubs(channel, found, { expectedGeneration: 3, stubs });
    expect(refused([stub(7)])).toMatchObject({
      kind: 'stale',
      reason: 'seq 7 is not a raw tool result to stub',
    });
    expect(refused([stub(12)])).toMatchObject({ reason: 'seq 12 is not a raw tool result to stub' });
    expect(refused([stub(6), stub(6)])).toMatchObject({ reason: 'seq 6 is not a raw tool result to stub' });
    // Not marked as a stub: a copy that would lose the result without saying so.
    expect(refused([{ seq: 6, text: 'shorter', tokens: 12 }])).toMatchObject({
      reason: 'seq 6 is not a raw tool result to stub',
    });
    const stubbed = rows.map((r) => (r.seq === 6 ? { ...r, stubbed: true } : r));
    expect(refused([stub(6)], stubbed)).toMatchObject({ reason: 'seq 6 is not a raw tool result to stub' });
  });

  it('refuses when the channel moved on or is not there, and changes nothing for no stubs', () => {
    expect(planStubs(channel, rows, { expectedGeneration: 2, stubs: [stub(6)] })).toEqual({
      kind: 'stale',
      reason: 'the channel is at generation 3',
    });
    expect(planStubs(undefined, [], { expectedGeneration: 0, stubs: [stub(6)] })).toEqual({
      kind: 'stale',
      reason: 'no such channel',
    });
    expect(planStubs(channel, rows, { expectedGeneration: 3, stubs: [] })).toMatchObject({
      kind: 'stub',
      copies: [],
      generation: 3,
      tokensSaved: 0,
    });
  });
});

describe('summarizedMessage', () => {
  it('gives a pass the stub of a stubbed result and the whole text of anything else', () => {
    const whole = { seq: 2, role: 'tool' as const, author: 'ci', text: 'log…', tokens: 9_000 };
    expect(summarizedMessage(whole)).toBe(whole);
    expect(summarizedMessage({ ...whole, stub: { text: '[stub]', tokens: 12 } })).toEqual({
      ...whole,
      text: '[stub]',
      tokens: 12,
    });
  });
});
