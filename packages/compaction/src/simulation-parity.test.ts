/**
 * `ebb simulate` predicts what the bot does: one transcript replayed through the bot's side
 * (`ChannelCompactor`, the real compaction processor, the in-process queue, in-memory stores) and
 * through `Simulation` gives the same sequence of compaction events, turn by turn.
 *
 * The bot's side runs on a fake clock that follows the transcript's timestamps; a pass takes
 * `LATENCY` turns because its summarizer answers only when the test releases it (the summary is made
 * from the snapshot taken when the pass starts, as in the simulation); cooldown delays and deferrals
 * wait on the same fake clock. Passes land oldest range first, as the simulation lands them.
 *
 * The second case replays what the bot archived, written to Postgres and read back in keyset pages
 * (`PgArchiveReader`, what `ebb simulate --from-archive` reads), with summarized messages dropped.
 */
import {
  type ArchiveReader,
  ChannelCompactor,
  type CompactionLogEvent,
  type CompactionPolicy,
  type ContextView,
  type ContextWriter,
  chatMessageTokens,
  measureMessage,
  type NewMessage,
  Simulation,
  type SimulationEvent,
  type SummarizeInput,
  type Summarizer,
  type SummaryOutput,
  type TakeBackLog,
  TRUNCATION_MARKER,
  type TranscriptMessage,
  type TurnLog,
  UNCALIBRATED,
} from '@ebb/core';
import {
  InMemoryChannelStore,
  InMemoryMemoryStore,
  InMemoryRunStore,
  InMemoryTakeBackLog,
} from '@ebb/core/testing';
import { PgArchiveReader, PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { ExtractiveSummarizer, loadTokenizer } from '@ebb/llm';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { describe, expect, it } from 'vitest';
import { createCompactionProcessor } from './compaction-processor.js';

const KEY = 'web:parity';
const LATENCY = 3;
const tokenizer = await loadTokenizer('o200k_base');
const policy: CompactionPolicy = {
  backgroundThreshold: 0.8,
  aggressiveThreshold: 0.85,
  emergencyThreshold: 0.95,
  backgroundFraction: 0.3,
  aggressiveFraction: 0.5,
  emergencyFraction: 0.5,
  protectRecent: 6,
  summaryMaxTokens: 300,
  // Long enough that a background pass waits out the cooldown and a burst escalates it.
  cooldownMs: 60_000,
  maxIneffectivePasses: 3,
  messageMaxTokens: 1_500,
  microcompaction: true,
  microcompactThreshold: 0.6,
  keepToolResults: 2,
  microcompactMinTokens: 150,
};
const settings = { policy, tokenizer, contextWindow: 6_000, maxOutputTokens: 500, reservedTokens: 120 };

/**
 * Quiet chatter, steady chatter, fast bursts, the odd long paste and tool turns with results of all
 * sizes, timestamped: every branch of the decision gets used.
 */
function transcript(n: number): TranscriptMessage[] {
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const words = [
    'deploy',
    'ledger',
    'p99',
    'rollback',
    'ticket',
    'schema',
    'cache',
    'on-call',
    'retry',
    'index',
  ];
  const out: TranscriptMessage[] = [];
  let t = Date.parse('2026-01-05T09:00:00Z');
  for (let i = 0; i < n; i++) {
    // Phases of 150 messages: quiet (seconds apart), steady (a few a second), a burst (tens a second).
    const phase = Math.floor(i / 150) % 3;
    t +=
      [
        1_000 + Math.floor(random() * 20_000),
        500 + Math.floor(random() * 500),
        10 + Math.floor(random() * 20),
      ][phase] ?? 0;
    const length = i % 97 === 41 ? 900 : 6 + Math.floor(random() * 40);
    const text = Array.from({ length }, () => words[Math.floor(random() * words.length)]).join(' ');
    if (i % 13 === 7) {
      // A tool turn: the bot's call, then a result of 50 to 400 words (small ones are never stubbed).
      const id = `call-${i}`;
      const ts = new Date(t).toISOString();
      out.push({
        role: 'assistant',
        author: 'ebb',
        text: '',
        ts,
        toolCalls: [{ id, name: 'ci.log', arguments: '{}' }],
      });
      const words = 50 + Math.floor(random() * 350);
      out.push({
        role: 'tool',
        author: 'ci.log',
        text: `build ${i}: ${text.repeat(Math.ceil(words / length))}`,
        ts,
        toolCallId: id,
      });
      continue;
    }
    out.push({
      role: i % 6 === 5 ? 'assistant' : 'user',
      author: `p${i % 5}`,
      text,
      ts: new Date(t).toISOString(),
    });
  }
  return out;
}

/** The fields both sides report the same way (job ids differ, and so do reasons that name them). */
function comparable(e: {
  event: string;
  tier: string;
  fromSeq?: number | null;
  toSeq?: number | null;
  reason?: string;
  usage?: number;
}) {
  const reason = e.reason?.replace(/ .*/, '') ?? null;
  // Both sides' usage as the simulation prints it (4 decimals), compared to 3.
  const usage =
    e.usage === undefined || e.event === 'started' || e.event === 'completed' || e.event === 'stale'
      ? null
      : Math.round(Math.round(e.usage * 10_000) / 10);
  return [e.event, e.tier, e.fromSeq ?? null, e.toSeq ?? null, reason, usage];
}

function simulate(messages: readonly TranscriptMessage[], retainArchive: 'all' | 'unsummarized' = 'all') {
  const seen: { turn: number; row: unknown[] }[] = [];
  let turn = 0;
  const sim = new Simulation({
    policy,
    contextWindow: settings.contextWindow,
    maxOutputTokens: settings.maxOutputTokens,
    reservedTokens: settings.reservedTokens,
    tokenizer,
    jobLatency: LATENCY,
    retainArchive,
    emit: (e: SimulationEvent) => {
      if (e.type === 'compaction') seen.push({ turn, row: comparable(e) });
    },
  });
  for (const m of messages) {
    turn++;
    sim.turn(m);
  }
  return { seen, summary: sim.finish() };
}

/** A summarizer that makes its summary at once (the snapshot) and answers when released. */
class GatedSummarizer implements Summarizer {
  readonly #inner = new ExtractiveSummarizer({ tokenizer });
  readonly pending: { fromSeq: number; turn: number; release: () => void }[] = [];
  turn = 0;

  async summarize(input: SummarizeInput): Promise<SummaryOutput> {
    const output = await this.#inner.summarize(input);
    await new Promise<void>((release) =>
      this.pending.push({ fromSeq: input.fromSeq, turn: this.turn, release }),
    );
    return output;
  }
}

async function replayThroughTheBot(
  messages: readonly TranscriptMessage[],
  channels: TurnLog & ArchiveReader & ContextWriter = new InMemoryChannelStore(),
  takeBacks: TakeBackLog = new InMemoryTakeBackLog(),
) {
  let now = Date.parse(messages[0]?.ts ?? '2026-01-05T09:00:00Z');
  const clock = () => now;
  const sleepers: { until: number; wake: () => void }[] = [];
  const sleep = (ms: number, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      sleepers.push({ until: now + ms, wake: resolve });
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  const runs = new InMemoryRunStore({ now: clock });
  const notifier = new InProcessContextNotifier();
  const summarizer = new GatedSummarizer();
  const seen: { turn: number; row: unknown[] }[] = [];
  let turn = 0;
  const onEvent = (e: CompactionLogEvent) => {
    seen.push({ turn, row: comparable({ ...e, event: e.event.replace('compaction.', '') }) });
  };
  const processor = createCompactionProcessor({
    channels,
    memories: new InMemoryMemoryStore(),
    runs,
    takeBacks,
    notifier,
    now: clock,
    // The worker's lines carry no usage (the simulation's do): compare them without it.
    onEvent: ({ usage: _usage, ...e }) => onEvent(e),
    settingsFor: async () => ({
      summaryMaxTokens: policy.summaryMaxTokens,
      memoryScope: 'channel',
      tokenizer,
      summarizer,
    }),
  });
  const queue = new InlineCompactionQueue({ processor, concurrency: 2, sleep });
  // The marker costs what the simulation counts for it.
  const markerTokens = chatMessageTokens(tokenizer, TRUNCATION_MARKER);
  const bot = new ChannelCompactor({ channels, runs, queue, markerTokens, now: clock, onEvent });
  const completed = new Set<string>();
  queue.on('completed', (e) => completed.add(e.jobId));
  queue.on('failed', (e) => completed.add(e.jobId));

  /** Lets the in-process queue start what is ready: its pump and the processor up to the summarizer. */
  const settle = async () => {
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  };
  let context: ContextView = await channels.loadContext(KEY);
  const awaited = new Set<string>();

  for (const message of messages) {
    turn++;
    summarizer.turn = turn;
    now = Math.max(now, Date.parse(message.ts ?? ''));
    // Delays that are over (cooldowns) start their passes.
    for (const s of sleepers.filter((x) => x.until <= now)) {
      sleepers.splice(sleepers.indexOf(s), 1);
      s.wake();
    }
    await settle();
    // Passes that have taken LATENCY turns land, oldest range first.
    const due = summarizer.pending
      .filter((p) => turn >= p.turn + LATENCY)
      .sort((a, b) => a.fromSeq - b.fromSeq);
    for (const p of due) {
      summarizer.pending.splice(summarizer.pending.indexOf(p), 1);
      const before = completed.size;
      p.release();
      for (let i = 0; i < 50 && completed.size === before; i++) await settle();
    }
    const stored = await channels.loadContext(KEY);
    if (stored.generation !== context.generation) {
      await bot.contextChanged(KEY, settings, UNCALIBRATED);
      context = stored;
    }
    const { entry, archivedTokens } = measureMessage(
      { seq: 0, ...message },
      tokenizer,
      policy.messageMaxTokens,
    );
    const { seq: _seq, ...rest } = entry;
    await channels.append(KEY, {
      ...rest,
      tokens: archivedTokens,
      contextTokens: entry.tokens,
      ...(entry.omittedTokens === undefined ? {} : { contextText: entry.text }),
    });
    context = await channels.loadContext(KEY);
    // The bot's tool loop archives a call with its results, then runs the monitor once.
    for (const call of message.toolCalls ?? []) awaited.add(call.id);
    if (message.toolCallId !== undefined) awaited.delete(message.toolCallId);
    if (awaited.size === 0) {
      const result = await bot.afterTurn(KEY, context, settings, UNCALIBRATED);
      if (result.context) context = result.context;
    }
    await settle();
  }
  // The passes still in flight land, as the simulation's `finish` lands them.
  for (const s of sleepers) s.wake();
  for (const p of summarizer.pending.splice(0).sort((a, b) => a.fromSeq - b.fromSeq)) p.release();
  await queue.close();
  return { seen };
}

describe('ebb simulate and the bot', () => {
  it('make the same compaction decisions, turn by turn, on the same transcript', async () => {
    const messages = transcript(1_200);
    const sim = simulate(messages);
    const bot = await replayThroughTheBot(messages);
    // Every branch was taken, so the comparison covers them.
    const reasons = new Set(sim.seen.map((s) => `${s.row[0]}:${s.row[4]}`));
    expect([...reasons].sort()).toEqual(
      expect.arrayContaining([
        'enqueued:escalated',
        'enqueued:follows',
        'emergency:null',
        'completed:null',
        'microcompacted:null',
        'skipped:nothing_to_free',
      ]),
    );
    expect(sim.summary.delayed).toBeGreaterThan(0);
    expect(bot.seen).toEqual(sim.seen);
  });

  it('so does the replay of the archive the bot wrote, read back from Postgres (ebb simulate --from-archive)', async () => {
    // The bot runs on the in-memory store, whose every step the test can settle; each message it
    // archives is archived in Postgres too, as it handed it to its store, and read back in pages.
    const appended: NewMessage[] = [];
    const channels = new (class extends InMemoryChannelStore {
      override append(channelKey: string, message: NewMessage) {
        appended.push(message);
        return super.append(channelKey, message);
      }
    })();
    const messages = transcript(1_200);
    const bot = await replayThroughTheBot(messages, channels);
    const pg = await freshSchemaDb({ poolSize: 2 });
    try {
      const archive = new PgChannelStore({ db: pg.db });
      for (const message of appended) await archive.append(KEY, message);
      const archived: TranscriptMessage[] = [];
      for await (const { seq: _seq, ...m } of new PgArchiveReader({ db: pg.db }).messages(KEY, {
        batchSize: 500,
      }))
        archived.push(m);
      expect(archived).toHaveLength(messages.length);
      const sim = simulate(archived, 'unsummarized');
      expect(sim.seen.filter((s) => s.row[0] === 'emergency').length).toBeGreaterThan(0);
      expect(bot.seen).toEqual(sim.seen);
    } finally {
      await pg.close();
    }
  });
});
