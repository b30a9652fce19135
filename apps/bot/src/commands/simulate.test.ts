import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { main } from '../cli.js';
import { syntheticTranscript } from '../demo/synthetic-transcript.js';

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
  `[llm]\ncontext_window = 16000\nmax_output_tokens = 1000\n[compaction]\nsummary_max_tokens = 800\n[memory]\nrecall_max_tokens = 200\n[prices."gpt-4o-mini"]\ninput_per_mtok = 0.15\noutput_per_mtok = 0.6\n`,
);

const capture = captureIo;

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
  it('on 20,000 generated messages: all three tiers, every message archived, peak usage below 1', async () => {
    const file = join(dir, 'chat-20k.jsonl');
    writeFileSync(file, `${[...syntheticTranscript(20_000)].map((m) => JSON.stringify(m)).join('\n')}\n`);
    const shipped = fileURLToPath(new URL('../../../../config.toml', import.meta.url));
    const io = capture();
    expect(await main(['simulate', file, '--config', shipped, '--json'], io)).toBe(0);
    const summary = JSON.parse(io.stdout().split('\n').at(-1) ?? '');
    expect(summary).toMatchObject({ type: 'summary', messages: 20_000, archived: 20_000 });
    expect(summary.tiers.background).toBeGreaterThan(0);
    expect(summary.tiers.aggressive).toBeGreaterThan(0);
    expect(summary.tiers.emergency).toBeGreaterThan(0);
    expect(summary.peakUsage).toBeLessThan(1);
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
    expect(text).toMatch(/summarizer cost at gpt-4o-mini prices: \$\d+\.\d{4}/);
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
