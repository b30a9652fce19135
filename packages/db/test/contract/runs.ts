/** The store contract: the run store. */
import type { CompactionRun, SummaryOutput } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ContractContext, ContractStores } from './support.js';

export function runsCases(current: () => ContractContext): void {
  let stores: ContractStores;
  let key: string;
  beforeEach(() => {
    ({ stores, key } = current());
  });

  describe('runs', () => {
    const range = (jobId: string) => ({
      jobId,
      channelKey: key,
      tier: 'background' as const,
      usage: 0.82,
      fromSeq: 1,
      toSeq: 10,
      generation: 3,
    });
    const output: SummaryOutput = {
      text: 'summary',
      memories: [{ type: 'fact', text: 'Ana prefers tea', importance: 0.5, fromSeq: 1, toSeq: 2 }],
      fallback: false,
      model: 'gpt-test',
      calls: [
        {
          purpose: 'summary',
          model: 'gpt-test',
          inputTokens: 100,
          outputTokens: 20,
          durationMs: 5,
          attempts: 1,
        },
      ],
    };

    it('records a run once, starts it per attempt and finishes it', async () => {
      const jobId = `${key}:j1`;
      expect(await stores.runs.start(jobId)).toBeUndefined();
      await stores.runs.create(range(jobId));
      await stores.runs.create({ ...range(jobId), tier: 'aggressive', usage: 0.9 });
      expect(await stores.runs.get(jobId)).toMatchObject({
        ...range(jobId),
        status: 'queued',
        attempts: 0,
      });

      expect(await stores.runs.start(jobId)).toMatchObject({ status: 'queued', attempts: 0 });
      expect(await stores.runs.start(jobId)).toMatchObject({ status: 'running', attempts: 1 });
      await stores.runs.saveOutput(jobId, output);
      expect((await stores.runs.get(jobId))?.output).toEqual(output);

      await stores.runs.finish(jobId, { status: 'running', error: 'llm_timeout' });
      expect((await stores.runs.get(jobId))?.finishedAt).toBeUndefined();
      await stores.runs.finish(jobId, {
        status: 'completed',
        tokensBefore: 1000,
        tokensAfter: 400,
        summaryTokens: 50,
        memoriesAdded: 1,
        model: 'gpt-test',
        fallback: false,
        inputTokens: 100,
        outputTokens: 20,
        durationMs: 1234,
      });
      const run = await stores.runs.get(jobId);
      expect(run).toMatchObject({
        ...range(jobId),
        status: 'completed',
        attempts: 2,
        tokensBefore: 1000,
        tokensAfter: 400,
        summaryTokens: 50,
        memoriesAdded: 1,
        model: 'gpt-test',
        fallback: false,
        inputTokens: 100,
        outputTokens: 20,
        durationMs: 1234,
        error: 'llm_timeout',
      });
      expect(typeof run?.createdAt).toBe('number');
      expect(typeof run?.finishedAt).toBe('number');

      // A retried job of a finished run gets it back unchanged.
      expect(await stores.runs.start(jobId)).toMatchObject({ status: 'completed', attempts: 2 });
      expect(await stores.runs.get(jobId)).toMatchObject({ status: 'completed', attempts: 2 });
    });

    it('reopens a failed or skipped run whose job runs again, but never a completed or stale one', async () => {
      for (const status of ['failed', 'skipped'] as const) {
        const jobId = `${key}:${status}`;
        await stores.runs.create(range(jobId));
        await stores.runs.start(jobId);
        await stores.runs.finish(jobId, { status, error: 'x' });
        expect(await stores.runs.start(jobId)).toMatchObject({ status });
        expect(await stores.runs.get(jobId)).toMatchObject({ status: 'running', attempts: 2 });
      }
      const stale = `${key}:stale`;
      await stores.runs.create(range(stale));
      await stores.runs.finish(stale, { status: 'stale' });
      await stores.runs.start(stale);
      expect(await stores.runs.get(stale)).toMatchObject({ status: 'stale', attempts: 0 });
    });

    it('keeps a run’s focus and the pass it follows, so a lost job is enqueued again as it was', async () => {
      const jobId = `${key}:follow-up`;
      await stores.runs.create({ ...range(jobId), focus: 'the deploy plan', after: `${key}:ahead` });
      expect(await stores.runs.get(jobId)).toMatchObject({ focus: 'the deploy plan', after: `${key}:ahead` });
      const plain = `${key}:plain`;
      await stores.runs.create(range(plain));
      const run = await stores.runs.get(plain);
      expect(run).not.toHaveProperty('focus');
      expect(run).not.toHaveProperty('after');
    });

    it('keeps the first checkpoint: a second worker on the job gets the stored output back', async () => {
      const jobId = `${key}:checkpoint`;
      await stores.runs.create(range(jobId));
      const first = { text: 'first', memories: [], fallback: false, model: 'm', calls: [] };
      const second = { ...first, text: 'second' };
      expect(await stores.runs.saveOutput(jobId, first)).toEqual(first);
      expect(await stores.runs.saveOutput(jobId, second)).toEqual(first);
      expect((await stores.runs.get(jobId))?.output).toEqual(first);
    });

    it('finishes only from the given statuses when asked to', async () => {
      const jobId = `${key}:only-from`;
      await stores.runs.create(range(jobId));
      await stores.runs.start(jobId);
      await stores.runs.finish(jobId, { status: 'skipped', error: 'escalated' }, { onlyFrom: ['queued'] });
      expect(await stores.runs.get(jobId)).toMatchObject({ status: 'running' });
      await stores.runs.finish(jobId, { status: 'completed' }, { onlyFrom: ['running'] });
      expect(await stores.runs.get(jobId)).toMatchObject({ status: 'completed' });
    });

    it('keeps a usage the worker did not know (NaN) until the bot records it', async () => {
      const jobId = `${key}:nan`;
      await stores.runs.create({ ...range(jobId), usage: Number.NaN });
      expect((await stores.runs.get(jobId))?.usage).toBeNaN();
      await stores.runs.create({ ...range(jobId), usage: 0.83 });
      expect((await stores.runs.get(jobId))?.usage).toBeCloseTo(0.83);
      await stores.runs.create({ ...range(jobId), usage: 0.99 });
      expect((await stores.runs.get(jobId))?.usage).toBeCloseTo(0.83);
    });

    it('lists a channel’s recent runs newest first', async () => {
      for (let i = 1; i <= 4; i++) await stores.runs.create(range(`${key}:r${i}`));
      await stores.runs.create({ ...range(`${key}:o`), channelKey: `${key}:other` });
      const recent = await stores.runs.recent(key, 3);
      expect(recent.map((r) => r.jobId)).toEqual([`${key}:r4`, `${key}:r3`, `${key}:r2`]);
      expect(await stores.runs.get('missing')).toBeUndefined();
      await stores.runs.finish('missing', { status: 'failed' });
      expect(await stores.runs.get('missing')).toBeUndefined();
    });

    it('lists unfinished runs across channels, oldest first, created before a time', async () => {
      const ids = ['queued', 'running', 'done', 'other'].map((s) => `${key}:unfinished-${s}`);
      const [queued = '', running = '', done = '', other = ''] = ids;
      await stores.runs.create(range(queued));
      await stores.runs.create(range(running));
      await stores.runs.start(running);
      await stores.runs.create(range(done));
      await stores.runs.finish(done, { status: 'completed' });
      await stores.runs.create({ ...range(other), channelKey: `${key}:other` });
      const ours = (runs: readonly CompactionRun[]) =>
        runs.map((r) => r.jobId).filter((id) => ids.includes(id));

      const later = Date.now() + 60_000;
      expect(ours(await stores.runs.unfinished({ createdBefore: later, limit: 10_000 }))).toEqual([
        queued,
        running,
        other,
      ]);
      const created = (await stores.runs.get(queued))?.createdAt ?? 0;
      expect(ours(await stores.runs.unfinished({ createdBefore: created, limit: 10_000 }))).toEqual([]);
      expect(await stores.runs.unfinished({ createdBefore: later, limit: 0 })).toEqual([]);
    });
  });
}
