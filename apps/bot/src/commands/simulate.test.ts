import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TranscriptMessage } from '@ebb/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { main } from '../cli/cli.js';
import { random, syntheticTranscript } from '../demo/synthetic-transcript.js';

const dir = mkdtempSync(join(tmpdir(), 'ebb-simulate-'));
const transcriptFile = join(dir, 'chat.jsonl');
writeFileSync(
  transcriptFile,
  `${[...syntheticTranscript(3_000, 7)].map((m) => JSON.stringify(m)).join('\n')}\n`,
);
// A small window so a few thousand messages go through many passes.
const configFile = join(dir, 'config.toml');
writeFileSync(
  configFile,
  `[llm]\ncontext_window = 16000\nmax_output_tokens = 1000\n[compaction]\nsummary_max_tokens = 800\n[memory]\nrecall_max_tokens = 200\n[prices."gpt-5.4-mini"]\ninput_per_mtok = 0.75\ncached_input_per_mtok = 0.075\noutput_per_mtok = 4.5\n`,
);

const capture = captureIo;
const PRICES =
  '[prices."gpt-5.4-mini"]\ninput_per_mtok = 0.75\ncached_input_per_mtok = 0.075\noutput_per_mtok = 4.5\n';

describe('ebb simulate --json', () => {
  let code: number;
  // biome-ignore lint/suspicious/noExplicitAny: parsed JSON Lines, checked field by field below
  let lines: any[];
  beforeAll(async () => {
    const io = capture();
    code = await main(['simulate', transcriptFile, '--config', configFile, '--json'], io);
    lines = io
      .stdout()
      .split('\n')
      .map((l) => JSON.parse(l));
  });

  it('prints only JSON Lines: one per message, compaction events, the summary last', () => {
    expect(code).toBe(0);
    const messages = lines.filter((l) => l.type === 'message');
    expect(messages).toHaveLength(3_000);
    expect(Object.keys(messages[0]).sort()).toEqual([
      'contextTokens',
      'role',
      'seq',
      'tokens',
      'type',
      'usage',
    ]);
    const compaction = lines.find((l) => l.type === 'compaction');
    for (const key of ['event', 'tier', 'seq', 'fromSeq', 'toSeq', 'usage', 'tokensBefore', 'tokensAfter']) {
      expect(compaction).toHaveProperty(key);
    }
    expect(lines.at(-1).type).toBe('summary');
  });

  it('shows background, aggressive and emergency passes, archives every message, stays under the window', () => {
    const summary = lines.at(-1);
    expect(summary.archived).toBe(summary.messages);
    expect(summary.tiers.background).toBeGreaterThan(0);
    expect(summary.tiers.aggressive).toBeGreaterThan(0);
    expect(summary.tiers.emergency).toBeGreaterThan(0);
    expect(summary.peakUsage).toBeLessThan(1);
    expect(summary.summarizerInputTokens).toBeGreaterThan(summary.summarizerOutputTokens);
    const events = new Set(lines.filter((l) => l.type === 'compaction').map((l) => l.event));
    for (const e of ['triggered', 'enqueued', 'started', 'completed', 'emergency'])
      expect(events).toContain(e);
  });
});

describe('ebb simulate with the shipped config.toml', () => {
  it('on 20,000 generated messages: held at its working size with no emergency, every message archived; at the window edge all three tiers', async () => {
    const file = join(dir, 'chat-20k.jsonl');
    writeFileSync(file, `${[...syntheticTranscript(20_000)].map((m) => JSON.stringify(m)).join('\n')}\n`);
    const shipped = fileURLToPath(new URL('../../../../config.toml', import.meta.url));
    const simulateWith = async (config: string) => {
      const io = capture();
      expect(await main(['simulate', file, '--config', config, '--json'], io)).toBe(0);
      const out = io.stdout().split('\n');
      const messages = out.slice(0, -1).filter((l) => l.startsWith('{"type":"message"'));
      const meanContext =
        messages.reduce((n, l) => n + (JSON.parse(l) as { contextTokens: number }).contextTokens, 0) /
        messages.length;
      return { summary: JSON.parse(out.at(-1) ?? ''), meanContext };
    };
    const working = await simulateWith(shipped);
    expect(working.summary).toMatchObject({ type: 'summary', messages: 20_000, archived: 20_000 });
    expect(working.summary.tiers.background).toBeGreaterThan(0);
    expect(working.summary.tiers.emergency).toBe(0);
    // Near 12,000 tokens: above it only while a paste among the newest messages holds it up (a
    // message may be a quarter of the window).
    expect(working.meanContext).toBeLessThan(2 * 12_000);

    const edgeFile = join(dir, 'shipped-edge.toml');
    writeFileSync(
      edgeFile,
      readFileSync(shipped, 'utf8').replace(/^working_tokens = \d+$/m, 'working_tokens = 0'),
    );
    const edge = await simulateWith(edgeFile);
    expect(edge.summary).toMatchObject({ messages: 20_000, archived: 20_000 });
    expect(edge.summary.tiers.background).toBeGreaterThan(0);
    expect(edge.summary.tiers.aggressive).toBeGreaterThan(0);
    expect(edge.summary.tiers.emergency).toBeGreaterThan(0);
    expect(edge.summary.peakUsage).toBeLessThan(1);
    expect(edge.meanContext).toBeGreaterThan(4 * working.meanContext);
  });
});

/**
 * Ordinary team chat, shaped like the #ubuntu IRC transcript: short lines (most under 20 words, a
 * few up to 40) from a dozen people, seconds to a minute apart, and now and then the bot's answer.
 */
function teamChat(messages: number, seed: number): TranscriptMessage[] {
  const rnd = random(seed);
  const words =
    'the deploy is green again can someone look at why ci fails on main i think the cache key changed after we bumped node so restart the runner and retry ok thanks that fixed it'.split(
      ' ',
    );
  const line = (n: number) =>
    Array.from({ length: n }, () => words[Math.floor(rnd() * words.length)]).join(' ');
  let at = Date.UTC(2026, 0, 5, 9, 0, 0);
  return Array.from({ length: messages }, (_, i): TranscriptMessage => {
    at += Math.floor(rnd() * 60) * 1_000;
    const ts = new Date(at).toISOString();
    if (i % 8 === 7) return { role: 'assistant', author: 'ebb', text: line(15 + Math.floor(rnd() * 30)), ts };
    return {
      role: 'user',
      author: `p${Math.floor(rnd() * 12)}`,
      text: line(1 + Math.floor(rnd() ** 2 * 40)),
      ts,
    };
  });
}

describe('ebb simulate: a small window with its own thresholds (issue 23)', () => {
  // The new user's web channel: 4,000 tokens, 500 of them for the reply, background at 0.70. With
  // the whole recall budget reserved (and no memories to recall), passes could not bring usage under
  // 0.70, grew the context, and the channel lived on emergency truncations.
  const chat = join(dir, 'team-chat.jsonl');
  const config = join(dir, 'new-user.toml');
  writeFileSync(
    chat,
    `${teamChat(400, 11)
      .map((m) => JSON.stringify(m))
      .join('\n')}\n`,
  );
  writeFileSync(
    config,
    '[llm]\ncontext_window = 4000\nmax_output_tokens = 500\n[web.compaction]\nbackground_threshold = 0.70\n',
  );

  it.each([
    ['at the pace it was written', []],
    ['as a burst, 5 messages a second, passes taking 2 s', ['--rate', '5', '--job-seconds', '2']],
  ])('replays 400 messages %s with no emergency and no pass that grows the context', async (_, pace) => {
    const io = capture();
    const args = ['simulate', chat, '--config', config, '--channel', 'web:new-user', '--json', ...pace];
    expect(await main(args, io)).toBe(0);
    const lines = io
      .stdout()
      .split('\n')
      .map((l) => JSON.parse(l));
    const summary = lines.at(-1);
    const completed = lines.filter((l) => l.type === 'compaction' && l.event === 'completed');
    expect(completed.length).toBeGreaterThan(5);
    expect(summary).toMatchObject({ archived: 400, tiers: { emergency: 0 }, ineffective: 0 });
    for (const pass of completed) expect(pass.tokensAfter).toBeLessThan(pass.tokensBefore);
    expect(summary.peakUsage).toBeLessThan(0.95);
  });
});

describe('ebb simulate (text)', () => {
  it('prints a timeline, a usage chart with the three thresholds, totals and cost', async () => {
    const io = capture();
    expect(await main(['simulate', transcriptFile, '--config', configFile, '--job-latency', '5'], io)).toBe(
      0,
    );
    const text = io.stdout();
    // Which tier fires first depends on the message that crosses a threshold and the prompt reserve.
    expect(text).toMatch(/Timeline\n {2}@ +\d+ {2}triggered (background|aggressive)/);
    expect(text).toContain('│ emergency 0.95');
    expect(text).toContain('│ background 0.80');
    expect(text).toMatch(/messages 3000, archived 3000/);
    expect(text).toMatch(/summarizer cost at gpt-5.4-mini prices: \$\d+\.\d{4}/);
  });
});

describe('ebb simulate with a working size', () => {
  it('starts passes at working_tokens, keeps the context near it, and costs less than at the window edge', async () => {
    const simulateWith = async (extra: string) => {
      const file = join(dir, `working-${extra.length}.toml`);
      writeFileSync(file, `[llm]\ncontext_window = 32000\n[compaction]\n${extra}\n${PRICES}`);
      const io = capture();
      expect(await main(['simulate', transcriptFile, '--config', file, '--json'], io)).toBe(0);
      const out = io
        .stdout()
        .split('\n')
        .map((l) => JSON.parse(l));
      const messages = out.filter((l) => l.type === 'message');
      return {
        summary: out.at(-1),
        meanContext: messages.reduce((n, m) => n + m.contextTokens, 0) / messages.length,
        firstTrigger: out.find((l) => l.type === 'compaction' && l.event === 'triggered'),
      };
    };
    const edge = await simulateWith('working_tokens = 0');
    const working = await simulateWith('working_tokens = 6000');
    // (32,000 - 4,096) × 0.8 = 22,323 tokens at the edge; 6,000 / 27,904 = 0.215 of the window.
    expect(edge.firstTrigger.usage).toBeGreaterThanOrEqual(0.8);
    expect(working.firstTrigger.usage).toBeGreaterThanOrEqual(0.215);
    expect(working.firstTrigger.usage).toBeLessThan(0.3);
    expect(working.meanContext).toBeLessThan(6_000);
    expect(working.meanContext).toBeLessThan(edge.meanContext / 2);
    // More passes, fewer reply tokens, and no emergency for it.
    expect(working.summary.tiers.background).toBeGreaterThan(edge.summary.tiers.background);
    expect(working.summary.tiers.emergency).toBe(0);
    expect(working.summary.promptCache.promptTokens).toBeLessThan(edge.summary.promptCache.promptTokens / 2);
  });
});

describe('ebb simulate errors', () => {
  it('stops at a malformed line and names it', async () => {
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(
      bad,
      '{"role":"user","author":"a","text":"hi"}\n\n{"role":"robot","author":"b","text":"x"}\n',
    );
    const io = capture();
    expect(await main(['simulate', bad, '--json'], io)).toBe(1);
    expect(io.stderr()).toMatch(/bad\.jsonl:3: role: Invalid option/);
    // The messages before the bad line were replayed and printed.
    expect(io.stdout()).toContain('"seq":1');

    const broken = join(dir, 'broken.jsonl');
    writeFileSync(broken, '{"role":"user","author":"a","text":"hi"}\n{"role":"user",\n');
    const io2 = capture();
    expect(await main(['simulate', broken], io2)).toBe(1);
    expect(io2.stderr()).toMatch(/broken\.jsonl:2: not valid JSON/);
    // No report of the part replayed: it would read as the whole replay's.
    expect(io2.stdout()).toBe('');
  });

  it('takes a line without a role as a participant’s message', async () => {
    const plain = join(dir, 'plain.jsonl');
    writeFileSync(
      plain,
      '{"author":"ana","text":"hi there"}\n{"role":"assistant","author":"ebb","text":"hello"}\n',
    );
    const io = capture();
    expect(await main(['simulate', plain, '--json'], io)).toBe(0);
    const messages = io
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"type":"message"'))
      .map((l) => (JSON.parse(l) as { role: string }).role);
    expect(messages).toEqual(['user', 'assistant']);
  });

  it('names a missing or invalid config file and its rule, not a stack', async () => {
    const io = capture();
    expect(await main(['simulate', transcriptFile, '--config', join(dir, 'nope.toml')], io)).toBe(1);
    expect(io.stderr()).toMatch(/nope\.toml: config file not found/);
    const invalid = join(dir, 'invalid.toml');
    writeFileSync(invalid, '[compaction]\nkeep_tool_results = -1\n');
    const io2 = capture();
    expect(await main(['simulate', transcriptFile, '--config', invalid], io2)).toBe(1);
    expect(io2.stderr()).toMatch(/invalid\.toml: compaction\.keep_tool_results: must be an integer >= 0/);
    expect(io2.stderr()).not.toMatch(/\n\s+at /);
  });

  it('refuses tool lines that do not pair: a result without its call id, a call on a user line', async () => {
    const bad = join(dir, 'bad-tools.jsonl');
    writeFileSync(
      bad,
      [
        '{"role":"assistant","author":"ebb","text":"","toolCalls":[{"id":"c1","name":"ci.log","arguments":"{}"}]}',
        '{"role":"tool","author":"ci.log","text":"ok"}',
      ].join('\n'),
    );
    const io = capture();
    expect(await main(['simulate', bad, '--json'], io)).toBe(1);
    expect(io.stderr()).toMatch(
      /bad-tools\.jsonl:2: toolCallId: a tool message, and only a tool message, answers a call/,
    );
    const onUser = join(dir, 'user-calls.jsonl');
    writeFileSync(
      onUser,
      '{"role":"user","author":"a","text":"","toolCalls":[{"id":"c","name":"n","arguments":""}]}\n',
    );
    const io2 = capture();
    expect(await main(['simulate', onUser, '--json'], io2)).toBe(1);
    expect(io2.stderr()).toMatch(
      /user-calls\.jsonl:1: toolCalls: only an assistant message makes tool calls/,
    );
  });

  it('names a missing transcript, and rejects bad arguments with usage', async () => {
    const io = capture();
    expect(await main(['simulate', join(dir, 'missing.jsonl')], io)).toBe(1);
    expect(io.stderr()).toContain('missing.jsonl');
    const io2 = capture();
    expect(await main(['simulate', transcriptFile, '--job-latency', 'soon'], io2)).toBe(2);
    expect(io2.stderr()).toContain('--job-latency takes a whole number');
    const io3 = capture();
    expect(await main(['simulate', transcriptFile, '--frobnicate'], io3)).toBe(2);
    expect(io3.stderr()).toContain("Unknown option '--frobnicate'");
  });
});

describe('ebb simulate on a tool-heavy transcript', () => {
  const tools = join(dir, 'tools.jsonl');
  const on = join(dir, 'microcompaction-on.toml');
  const off = join(dir, 'microcompaction-off.toml');

  beforeAll(async () => {
    const io = capture();
    expect(await main(['transcript', '--tools', '--messages', '1500', '--seed', '3'], io)).toBe(0);
    writeFileSync(tools, `${io.stdout()}\n`);
    writeFileSync(on, `${readConfig()}\n`);
    writeFileSync(off, `${readConfig()}\nmicrocompaction = false\n`);
  });

  /** The small-window config of this file, its [compaction] section last so a key can be added. */
  const readConfig = () =>
    '[llm]\ncontext_window = 16000\nmax_output_tokens = 1000\n[memory]\nrecall_max_tokens = 200\n[compaction]\nsummary_max_tokens = 800';

  const summaryOf = async (config: string) => {
    const io = capture();
    expect(await main(['simulate', tools, '--config', config, '--json'], io)).toBe(0);
    const lines = io
      .stdout()
      .split('\n')
      .map((l) => JSON.parse(l));
    return { summary: lines.at(-1), events: lines.filter((l) => l.type === 'compaction') };
  };

  it('prints tool turns: calls with their results right after them', async () => {
    const io = capture();
    await main(['transcript', '--tools', '--messages', '400', '--seed', '3'], io);
    const messages = io
      .stdout()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(messages).toHaveLength(400);
    const calls = messages.flatMap((m, i) =>
      (m.toolCalls ?? []).map((c: { id: string }) => ({ id: c.id, i })),
    );
    expect(calls.length).toBeGreaterThan(5);
    for (const { id, i } of calls) {
      const results = messages.slice(i + 1).findIndex((m) => m.role !== 'tool');
      const answered = messages.slice(i + 1, i + 1 + results).map((m) => m.toolCallId);
      expect(answered).toContain(id);
    }
  });

  it('stubs old tool results and needs fewer passes and summarizer tokens than without', async () => {
    const onRun = await summaryOf(on);
    const offRun = await summaryOf(off);
    expect(onRun.summary.stubbedResults).toBeGreaterThan(10);
    expect(
      onRun.events.some(
        (e: { event: string; tier: string }) => e.event === 'microcompacted' && e.tier === 'microcompact',
      ),
    ).toBe(true);
    expect(offRun.summary.stubbedResults).toBe(0);
    expect(onRun.summary.archived).toBe(1500);
    const passes = (s: { tiers: Record<'background' | 'aggressive' | 'emergency', number>; heals: number }) =>
      s.tiers.background + s.tiers.aggressive + s.tiers.emergency + s.heals;
    expect(passes(onRun.summary)).toBeLessThan(passes(offRun.summary));
    expect(onRun.summary.summarizerInputTokens).toBeLessThan(offRun.summary.summarizerInputTokens);
  });
});
