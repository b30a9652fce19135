/**
 * The queued pass of a deletion, on the in-memory stores with the real extractive summarizer: it
 * writes the summary holding a tombstoned message again from the archive as it stands, and while a
 * compaction pass over the message is in flight (it may have read the message before it was taken
 * back) it runs again once that pass has ended, so what the pass puts in place is written again too,
 * and what it learned from the message is dropped then.
 */
import { PENDING_SUMMARY, REDACTED_MESSAGE, tombstone, toNewMessage } from '@ebb/core';
import { InMemoryChannelStore, InMemoryRunStore } from '@ebb/core/testing';
import { ExtractiveSummarizer, loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { expect, it, vi } from 'vitest';
import { RedactionPasses, type RedactionPassesOptions } from './redaction-passes.js';

const KEY = 'web:passes';

it('writes the summary again from the archive, and again once a pass that was in flight has ended', async () => {
  const tokenizer = await loadTokenizer('o200k_base');
  const channels = new InMemoryChannelStore();
  const runs = new InMemoryRunStore();
  for (let i = 1; i <= 10; i++) {
    const text = i === 3 ? 'the door code is 5512-KITE' : `message ${i} about the release`;
    await channels.append(KEY, toNewMessage({ role: 'user', author: 'ana', text }, tokenizer, 1_000));
  }
  await channels.splice(KEY, {
    jobId: 'j1',
    fromSeq: 1,
    toSeq: 6,
    text: 'ana: the door code is 5512-KITE',
    tokens: 12,
  });
  // A pass over the message, queued before it was taken back.
  await runs.create({
    jobId: 'j2',
    channelKey: KEY,
    tier: 'background',
    usage: 0.8,
    fromSeq: 1,
    toSeq: 8,
    generation: 1,
  });
  const [said] = await channels.readArchive(KEY, 3, 3);
  if (!said) throw new Error('no seq 3');
  await channels.redactArchive(KEY, [tombstone(said, tokenizer)]);

  const logger = new RecordingLogger();
  const passes = new RedactionPasses({
    channels,
    runs,
    settingsFor: async () => ({
      summaryMaxTokens: 500,
      memoryScope: 'channel',
      tokenizer,
      summarizer: new ExtractiveSummarizer({ tokenizer }),
    }),
    notifier: new InProcessContextNotifier(),
    logger,
    retryMs: 1,
    maxTries: 10_000,
  });
  // What the deletion drops once the passes in flight have landed (what they learned from the message).
  let checked = 0;
  passes.enqueue(KEY, [{ fromSeq: 3, toSeq: 3 }], async () => {
    checked++;
    return 1;
  });
  expect(passes.pending).toBe(1);
  await vi.waitFor(() => expect(logger.events('message.resummarize_waiting').length).toBeGreaterThan(0));
  // Already written once, from the tombstone.
  const first = (await channels.loadPrefix(KEY)).spans[0];
  expect(first?.kind === 'summary' ? first.text : '').not.toContain('5512');
  expect(first?.kind === 'summary' ? first.text : '').toContain(REDACTED_MESSAGE);
  expect(logger.events('message.resummarized')).toEqual([]);
  expect(checked).toBe(0);

  // The pass lands what it read before (the code), then ends: the redaction writes that again.
  await channels.splice(KEY, {
    jobId: 'j2',
    fromSeq: 1,
    toSeq: 8,
    text: 'ana said the door code is 5512-KITE',
    tokens: 12,
  });
  await runs.finish('j2', { status: 'completed' });
  await passes.idle();
  expect(passes.pending).toBe(0);
  expect(logger.events('message.resummarized')[0]?.fields).toMatchObject({
    inFlight: 0,
    unresolved: 0,
    memories: 1,
  });
  expect(checked).toBe(1);
  const [span] = (await channels.loadPrefix(KEY)).spans;
  expect(span).toMatchObject({ kind: 'summary', fromSeq: 1, toSeq: 8 });
  expect(span?.kind === 'summary' ? span.text : '').not.toContain('5512');
  expect(span?.kind === 'summary' ? span.text : '').not.toBe(PENDING_SUMMARY);
});

/**
 * A channel whose summary 1..6 holds seq 3, and passes that can never write it again: the
 * summarizer's settings cannot be read (Postgres away), so every try fails.
 */
async function failingPasses(tries: Pick<RedactionPassesOptions, 'retryMs' | 'maxTries'>) {
  const tokenizer = await loadTokenizer('o200k_base');
  const channels = new InMemoryChannelStore();
  for (let i = 1; i <= 6; i++)
    await channels.append(
      KEY,
      toNewMessage({ role: 'user', author: 'ana', text: `message ${i}` }, tokenizer, 1_000),
    );
  await channels.splice(KEY, { jobId: 'j1', fromSeq: 1, toSeq: 6, text: 'ana: six messages', tokens: 5 });
  const logger = new RecordingLogger();
  const passes = new RedactionPasses({
    channels,
    runs: new InMemoryRunStore(),
    settingsFor: async () => {
      throw new Error('the settings store is away');
    },
    notifier: new InProcessContextNotifier(),
    logger,
    ...tries,
  });
  return { passes, logger };
}

it('gives a pass up after maxTries failures, logged naming the command that finishes the job', async () => {
  const { passes, logger } = await failingPasses({ retryMs: 1, maxTries: 3 });
  passes.enqueue(KEY, [{ fromSeq: 3, toSeq: 3 }]);
  await passes.idle();
  expect(passes.pending).toBe(0);
  expect(logger.events('message.resummarize_retry').map((e) => e.fields.tries)).toEqual([1, 2]);
  const [failed] = logger.events('message.resummarize_failed');
  expect(failed?.fields).toMatchObject({ channel: KEY, tries: 3 });
  expect(failed?.message).toContain('ebb forget --match');
  expect(logger.events('message.resummarized')).toEqual([]);
});

it('stops waiting to try again when the bot stops: the pass gives up at once, logged', async () => {
  // Longer than the test's timeout: idle() resolves only because stop() cuts the wait.
  const { passes, logger } = await failingPasses({ retryMs: 3_600_000, maxTries: 5 });
  passes.enqueue(KEY, [{ fromSeq: 3, toSeq: 3 }]);
  await vi.waitFor(() => expect(logger.events('message.resummarize_retry')).toHaveLength(1));
  passes.stop();
  await passes.idle();
  expect(passes.pending).toBe(0);
  expect(logger.events('message.resummarize_failed')[0]?.fields).toMatchObject({ channel: KEY, tries: 2 });
});
