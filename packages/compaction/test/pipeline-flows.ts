/**
 * The pipeline's flows, run against every way Ebb can be deployed: Postgres + BullMQ workers, and
 * embedded PGlite + the in-process queue. The bot side is the real ChannelCompactor, the LLM is the
 * fake OpenAI server behind the real openai client, and every assertion is on the stored rows.
 */
import { parseConfig, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import {
  type ArchiveReader,
  ChannelCompactor,
  type CompactionQueue,
  type CompactorSettings,
  type ContextNotifier,
  type ContextView,
  type ContextWriter,
  chatMessageTokens,
  type MemoryStore,
  type RunStatus,
  type RunStore,
  systemPromptTokens,
  type Tokenizer,
  TRUNCATION_MARKER,
  type TurnLog,
  toNewMessage,
  UNCALIBRATED,
} from '@ebb/core';
import { loadTokenizer, type RetryOptions } from '@ebb/llm';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

export interface PipelineHarness {
  readonly channels: TurnLog & ArchiveReader & ContextWriter;
  readonly memories: MemoryStore;
  readonly runs: RunStore;
  readonly queue: CompactionQueue;
  readonly notifier: ContextNotifier;
  close(): Promise<void>;
}

export interface HarnessInput {
  readonly config: ReturnType<typeof parseConfig>;
  /** Fast LLM retries so failure flows take milliseconds. */
  readonly retry: RetryOptions;
  readonly llmTimeoutMs: number;
}

export const FAST_RETRY: RetryOptions = { attempts: 4, initialDelayMs: 5, maxDelayMs: 20 };
const CHANNEL = 'slack:T1:C1';
const OTHER = 'slack:T1:C2';
const tokenizer = loadTokenizer('o200k_base');

/** The compactor settings of a resolved channel, as the bot computes them (system prompt and recall reserved). */
export function compactorSettingsFor(
  channel: ResolvedChannelConfig,
  tokenizer: Tokenizer,
): CompactorSettings {
  return {
    policy: channel.compaction,
    tokenizer,
    contextWindow: channel.llm.contextWindow,
    maxOutputTokens: channel.llm.maxOutputTokens,
    reservedTokens: systemPromptTokens(tokenizer, channel.bot.systemPrompt) + channel.memory.recallMaxTokens,
  };
}

export function pipelineConfig(baseUrl: string) {
  return parseConfig(pipelineToml(baseUrl), 'pipeline-test.toml');
}

/** The pipeline tests' config.toml: a small window, so a few dozen messages trigger a pass. */
export function pipelineToml(baseUrl: string): string {
  return [
    '[llm]',
    'context_window = 4000',
    'max_output_tokens = 500',
    `base_url = "${baseUrl}"`,
    '[compaction]',
    'summary_max_tokens = 300',
    'protect_recent = 4',
    'cooldown_seconds = 0',
    '[memory]',
    'recall_max_tokens = 200',
  ].join('\n');
}

const REPLY = {
  json: {
    summary: '## Decisions\n- Ana and Bo agreed to ship v2 on Friday (#3).',
    memories: [
      { type: 'decision', text: 'Ship v2 on Friday', importance: 0.9, speaker: 'ana', fromSeq: 3, toSeq: 3 },
    ],
  },
};

export function describePipelineFlows(
  name: string,
  makeHarness: (input: HarnessInput) => Promise<PipelineHarness>,
) {
  describe(name, () => {
    let fake: FakeOpenAiServer;
    let h: PipelineHarness;
    let channel: ResolvedChannelConfig;
    let settings: CompactorSettings;
    let compactor: ChannelCompactor;
    let changes: { channelKey: string; generation: number }[];
    let unsubscribe: () => Promise<void>;
    let sent = 0;
    // The channel at human pace, a message every 10 s: passes start at their thresholds (pacing
    // under bursts is `decideAfterTurn`'s, tested in core and in the simulation parity test).
    let clock = Date.now();

    beforeEach(async () => {
      fake = await FakeOpenAiServer.start();
      fake.reply(() => REPLY);
      const config = pipelineConfig(fake.url);
      h = await makeHarness({ config, retry: FAST_RETRY, llmTimeoutMs: 10_000 });
      channel = resolveChannel(config, CHANNEL);
      const t = await tokenizer;
      settings = {
        policy: channel.compaction,
        tokenizer: t,
        contextWindow: channel.llm.contextWindow,
        maxOutputTokens: channel.llm.maxOutputTokens,
        reservedTokens: systemPromptTokens(t, channel.bot.systemPrompt) + channel.memory.recallMaxTokens,
      };
      compactor = new ChannelCompactor({
        channels: h.channels,
        runs: h.runs,
        queue: h.queue,
        markerTokens: chatMessageTokens(t, TRUNCATION_MARKER),
        now: () => clock,
      });
      changes = [];
      unsubscribe = await h.notifier.subscribe((c) => changes.push(c));
    });

    afterEach(async () => {
      await unsubscribe();
      await h.close();
      await fake.close();
    });

    /** One turn: a message appended (with the platform id given, or a fresh one), then the monitor. */
    async function turn(text: string, platformMessageId = `p${++sent}`, key = CHANNEL) {
      clock += 10_000;
      const t = await tokenizer;
      const appended = await h.channels.append(
        key,
        toNewMessage(
          { role: 'user', author: sent % 2 ? 'ana' : 'bo', text, platformMessageId },
          t,
          channel.compaction.messageMaxTokens,
        ),
      );
      const context = await h.channels.loadContext(key);
      const result = await compactor.afterTurn(key, context, settings, UNCALIBRATED);
      return { appended, result };
    }

    /** Chats until the monitor enqueues a pass; returns its job id. */
    async function chatUntilPass(): Promise<string> {
      for (let i = 0; i < 400; i++) {
        const { result } = await turn(
          `message ${i}: the release checklist item ${i} is done, see OPS-${1000 + i}`,
        );
        if (result.jobId) return result.jobId;
      }
      throw new Error('no pass was triggered');
    }

    async function waitForRun(jobId: string, statuses: readonly RunStatus[]) {
      return vi.waitFor(
        async () => {
          const run = await h.runs.get(jobId);
          if (!run || !statuses.includes(run.status)) throw new Error(`run ${jobId} is ${run?.status}`);
          return run;
        },
        { timeout: 20_000, interval: 25 },
      );
    }

    it('runs a background pass end to end: messages → job → summary span → memories → run completed', async () => {
      const jobId = await chatUntilPass();
      const run = await waitForRun(jobId, ['completed']);
      expect(run).toMatchObject({
        tier: 'background',
        fallback: false,
        memoriesAdded: 1,
        model: 'gpt-5.4-mini',
      });
      expect(run.tokensAfter).toBeLessThan(run.tokensBefore ?? 0);
      expect(run.inputTokens).toBeGreaterThan(0);

      const context = await h.channels.loadContext(CHANNEL);
      expect(context.spans).toMatchObject([{ kind: 'summary', fromSeq: 1, toSeq: run.toSeq, jobId }]);
      expect(context.spans[0]?.kind === 'summary' && context.spans[0].text).toContain('ship v2 on Friday');
      expectCoverage(context);
      expect(await h.channels.readArchive(CHANNEL, 1, context.headSeq)).toHaveLength(context.headSeq);

      expect(await h.memories.list({ channelKey: CHANNEL })).toMatchObject([
        { type: 'decision', text: 'Ship v2 on Friday', speaker: 'ana', scope: CHANNEL },
      ]);
      // The request asked for structured output and carried the messages as data.
      const request = fake.completionRequests[0]?.body as { response_format?: { type: string } };
      expect(request.response_format?.type).toBe('json_schema');
      await vi.waitFor(() =>
        expect(changes).toContainEqual({ channelKey: CHANNEL, generation: context.generation }),
      );
    });

    it('truncates in an emergency while a pass runs; the pass trims the marker, a heal replaces it, nothing is lost', async () => {
      fake.fail({ kind: 'slow', delayMs: 1_500 }, { times: 1 });
      const first = await chatUntilPass();
      await vi.waitFor(() => expect(fake.completionRequests.length).toBeGreaterThan(0), { timeout: 10_000 });
      // While the LLM is busy, a burst of long messages crosses the emergency threshold.
      let emergency: ContextView | undefined;
      for (let i = 0; i < 40 && !emergency; i++) {
        const { result } = await turn(`log paste ${i}: ${'ERROR pool exhausted request_id=42 '.repeat(30)}`);
        if (result.action.kind === 'emergency') emergency = result.context;
      }
      expect(emergency?.spans.some((s) => s.kind === 'truncated')).toBe(true);
      expectCoverage(emergency as ContextView);

      const firstRun = await waitForRun(first, ['completed', 'stale']);
      let context = await h.channels.loadContext(CHANNEL);
      expectCoverage(context);
      if (firstRun.status === 'completed') {
        expect(context.spans[0]).toMatchObject({
          kind: 'summary',
          fromSeq: 1,
          toSeq: firstRun.toSeq,
          jobId: first,
        });
      }

      // The next turn sees the marker and, with no pass in flight, queues the heal.
      const { result } = await turn('are we still on for Friday?');
      const heal = result.jobId;
      expect(heal).toBeDefined();
      await waitForRun(heal as string, ['completed']);
      context = await h.channels.loadContext(CHANNEL);
      expectCoverage(context);
      expect(context.spans.some((s) => s.kind === 'truncated')).toBe(false);
      expect(await h.channels.readArchive(CHANNEL, 1, context.headSeq)).toHaveLength(context.headSeq);
    });

    it('rides out a 429 storm and ends in success', async () => {
      fake.fail({ kind: 'rate_limit', retryAfterMs: 20 }, { times: 3 });
      const jobId = await chatUntilPass();
      const run = await waitForRun(jobId, ['completed']);
      expect(run).toMatchObject({ fallback: false, memoriesAdded: 1 });
      expect(fake.completionRequests).toHaveLength(4);
    });

    it('falls back to the extractive summary when the LLM keeps failing, and the pass still shrinks the context', async () => {
      fake.fail({ kind: 'server_error' }, { times: 1_000 });
      const jobId = await chatUntilPass();
      const run = await waitForRun(jobId, ['completed']);
      // A background pass waits for the LLM while it has tries left; the last one lands the fallback.
      expect(run).toMatchObject({ tier: 'background', attempts: 5, fallback: true, model: 'extractive' });
      expect(run).toMatchObject({ memoriesAdded: 0, error: 'llm_server' });
      expect(run.tokensAfter).toBeLessThan(run.tokensBefore ?? 0);
      const context = await h.channels.loadContext(CHANNEL);
      expect(context.spans[0]?.kind === 'summary' && context.spans[0].text).toMatch(/^Participants: /);
      expectCoverage(context);
    });

    it('stores a duplicate platform message once and keeps channels apart', async () => {
      const a = await turn('hello', 'slack-ts-1');
      const b = await turn('hello', 'slack-ts-1');
      const c = await turn('hello', 'slack-ts-1', OTHER);
      expect(a.appended).toMatchObject({ seq: 1, inserted: true });
      expect(b.appended).toMatchObject({ seq: 1, inserted: false });
      expect(c.appended).toMatchObject({ seq: 1, inserted: true });
      expect((await h.channels.loadContext(CHANNEL)).headSeq).toBe(1);
    });
  });
}

/** Every seq 1..head is in the context exactly once: under a span or raw, in order. */
function expectCoverage(context: ContextView): void {
  let next = 1;
  for (const s of context.spans) {
    expect(s.fromSeq).toBe(next);
    next = s.toSeq + 1;
  }
  for (const m of context.raw) {
    expect(m.seq).toBe(next);
    next++;
  }
  expect(next - 1).toBe(context.headSeq);
}
