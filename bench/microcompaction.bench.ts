/**
 * Microcompaction on a tool-heavy channel: `ebb transcript --tools` (JSON search results, build
 * logs of 1,500-10,000 tokens, runbooks among the chat) replayed through `Simulation`, the engine
 * `ebb simulate` runs and the bot shares its decision with, once with microcompaction and once
 * without, at the shipped defaults (128k window). Passes are what the LLM is called for; summarizer
 * input tokens are what those calls read. Both runs are in this process, so the ratios hold on a
 * noisy machine; the engine's time is there to show stubbing costs no more than it saves.
 */
import {
  type CompactionPolicy,
  Simulation,
  type SummaryEvent,
  systemPromptTokens,
  type TranscriptMessage,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import { median, nowMs, shippedDefaults, syntheticMessages, table } from './support.js';

const MESSAGES = 20_000;
const RUNS = 3;

export async function microcompactionBench(): Promise<string> {
  const transcripts = [
    ['--tools', syntheticMessages(MESSAGES, 1, ['--tools'])],
    ['--tools --log-pastes', syntheticMessages(MESSAGES, 1, ['--tools', '--log-pastes'])],
  ] as const;
  const settings = await shippedDefaults();
  const tokenizer = await loadTokenizer(settings.llm.encoding);
  const reservedTokens =
    systemPromptTokens(tokenizer, settings.bot.systemPrompt) + settings.memory.recallMaxTokens;
  const results = transcripts[0][1].filter((m) => m.role === 'tool');
  const resultTokens = results.reduce((n, m) => n + tokenizer.count(m.text), 0);

  const replay = (
    messages: readonly TranscriptMessage[],
    policy: CompactionPolicy,
    latency: { jobLatency: number; jobSeconds?: number },
  ) => {
    let summary: SummaryEvent | undefined;
    const times: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const start = nowMs();
      const sim = new Simulation({
        policy,
        contextWindow: settings.llm.contextWindow,
        maxOutputTokens: settings.llm.maxOutputTokens,
        reservedTokens,
        tokenizer,
        ...latency,
        emit: () => {},
      });
      for (const m of messages) sim.turn(m);
      summary = sim.finish();
      times.push(nowMs() - start);
    }
    if (!summary) throw new Error('no runs');
    return { summary, ms: median(times) };
  };

  const rows: (string | number)[][] = [];
  const ratios: string[] = [];
  for (const [flags, messages, label, latency] of [
    [...transcripts[0], 'passes take 2 turns', { jobLatency: 2 }],
    [...transcripts[0], 'passes take 30 s', { jobLatency: 2, jobSeconds: 30 }],
    [...transcripts[1], 'passes take 2 turns', { jobLatency: 2 }],
  ] as const) {
    const on = replay(messages, { ...settings.compaction, microcompaction: true }, latency);
    const off = replay(messages, { ...settings.compaction, microcompaction: false }, latency);
    for (const [name, run] of [
      ['on', on],
      ['off', off],
    ] as const) {
      const s = run.summary;
      rows.push([
        flags,
        label,
        name,
        passes(s),
        s.tiers.emergency,
        s.summarizerInputTokens.toLocaleString('en'),
        s.stubbedResults,
        s.peakUsage.toFixed(3),
        run.ms.toFixed(0),
      ]);
    }
    ratios.push(
      `${flags}, ${label}: off/on passes ${(passes(off.summary) / passes(on.summary)).toFixed(2)}×, summarizer input ${(off.summary.summarizerInputTokens / on.summary.summarizerInputTokens).toFixed(2)}×, engine time on/off ${(on.ms / off.ms).toFixed(2)}`,
    );
  }
  return [
    `\`ebb transcript --tools --messages ${MESSAGES}\`: ${results.length.toLocaleString('en')} tool results, ${resultTokens.toLocaleString('en')} tokens of them; \`--log-pastes\` adds the users' long log pastes of the plain transcript (1 message in 1,000, up to a quarter of the window). Shipped defaults (128k window, microcompact 0.60, keep 3, min 200 tokens). Engine time: median of ${RUNS}.`,
    '',
    table(
      [
        'transcript',
        'pass latency',
        'microcompaction',
        'LLM passes (incl. heals)',
        'emergencies',
        'summarizer input tokens',
        'results stubbed',
        'peak usage',
        'engine ms',
      ],
      rows,
    ),
    '',
    ...ratios.map((r) => `- ${r}`),
  ].join('\n');
}

function passes(s: SummaryEvent): number {
  return s.tiers.background + s.tiers.aggressive + s.tiers.emergency + s.heals;
}
