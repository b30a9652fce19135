import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { InMemoryUsageStore } from '../testing/in-memory-usage-store.js';
import { RecordingLogger } from '../testing/recording-logger.js';
import { RetryingUsageStore } from './retrying-usage-store.js';
import type { UsageQuery, UsageStore, UsageTotals } from './usage.js';

/** The in-memory store, which refuses every call while `down`, as Postgres away does. */
class OutageStore implements UsageStore {
  readonly inner = new InMemoryUsageStore();
  down = false;
  writes = 0;

  async record(usage: UsageTotals, at: Date): Promise<void> {
    this.writes += 1;
    if (this.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'store_unavailable' });
    await this.inner.record(usage, at);
  }
  async totalsSince(since: Date, keys?: readonly string[]): Promise<UsageTotals[]> {
    if (this.down) throw new Error('down');
    return await this.inner.totalsSince(since, keys);
  }
  async totalsIn(query: UsageQuery): Promise<UsageTotals[]> {
    if (this.down) throw new Error('down');
    return await this.inner.totalsIn(query);
  }
}

const AT = new Date('2026-12-04T10:15:00Z');
const EPOCH = new Date(0);
const reply = (channelKey: string, promptTokens: number): UsageTotals => ({
  channelKey,
  purpose: 'reply',
  model: 'gpt-5.4-mini',
  calls: 1,
  promptTokens,
  cachedTokens: 0,
  completionTokens: 10,
  replies: 1,
});
const spentBy = async (store: UsageStore, channelKey: string) =>
  (await store.totalsIn({ from: EPOCH, channel: { key: channelKey } })).reduce(
    (sum, t) => ({ calls: sum.calls + t.calls, promptTokens: sum.promptTokens + t.promptTokens }),
    { calls: 0, promptTokens: 0 },
  );

describe('RetryingUsageStore', () => {
  it('keeps what the store refuses and writes it again, with backoff, once the store takes it', async () => {
    const store = new OutageStore();
    const log = new RecordingLogger();
    const usage = new RetryingUsageStore({ store, log, retryMs: 5, maxRetryMs: 20 });
    store.down = true;
    // Resolves: a turn never fails for its usage.
    await usage.record(reply('web:a', 100), AT);
    await usage.record(reply('web:a', 200), AT);
    await usage.record(reply('web:b', 50), AT);
    expect(usage.kept).toBe(2);
    expect(log.events('usage.record_deferred')).toHaveLength(1);
    await vi.waitFor(() => expect(store.writes).toBeGreaterThan(5));
    store.down = false;
    await vi.waitFor(() => expect(log.events('usage.recorded_late')).toHaveLength(1));
    expect(log.events('usage.recorded_late')[0]?.fields).toMatchObject({ records: 3, dropped: 0 });
    expect(await spentBy(store.inner, 'web:a')).toEqual({ calls: 2, promptTokens: 300 });
    expect(await spentBy(store.inner, 'web:b')).toEqual({ calls: 1, promptTokens: 50 });
    expect(usage.kept).toBe(0);
  });

  it('writes what is kept before a read, so a spend read after an outage sees it', async () => {
    const store = new OutageStore();
    const usage = new RetryingUsageStore({ store, log: new RecordingLogger(), retryMs: 60_000 });
    store.down = true;
    await usage.record(reply('web:a', 100), AT);
    store.down = false;
    expect(await spentBy(usage, 'web:a')).toEqual({ calls: 1, promptTokens: 100 });
    await usage.close();
  });

  it('keeps one merged record per channel, hour, purpose and model, and drops past its bound, said once', async () => {
    const store = new OutageStore();
    const log = new RecordingLogger();
    const usage = new RetryingUsageStore({ store, log, retryMs: 60_000, maxKept: 2 });
    store.down = true;
    for (let i = 0; i < 1_000; i++) await usage.record(reply('web:a', 1), AT);
    await usage.record(reply('web:b', 1), AT);
    await usage.record(reply('web:c', 1), AT);
    await usage.record(reply('web:d', 1), AT);
    expect(usage.kept).toBe(2);
    expect(log.events('usage.dropped')).toHaveLength(1);
    store.down = false;
    expect(await spentBy(usage, 'web:a')).toEqual({ calls: 1_000, promptTokens: 1_000 });
    expect(await spentBy(usage, 'web:c')).toEqual({ calls: 0, promptTokens: 0 });
    expect(log.events('usage.recorded_late')[0]?.fields).toMatchObject({ records: 1_001, dropped: 2 });
  });

  it('drops a record the store refuses for good, and one after close, saying so each time', async () => {
    const log = new RecordingLogger();
    const refused = Object.assign(new Error('violates check constraint'), {
      code: 'db_constraint',
      retryable: false,
    });
    let fail: Error | undefined = refused;
    const store: UsageStore = {
      record: async () => {
        if (fail) throw fail;
      },
      totalsSince: async () => [],
      totalsIn: async () => [],
    };
    const usage = new RetryingUsageStore({ store, log, retryMs: 60_000 });
    await usage.record(reply('web:a', 100), AT);
    expect(usage.kept).toBe(0);
    await usage.close();
    fail = new Error('connect ECONNREFUSED');
    await usage.record(reply('web:a', 100), AT);
    expect(usage.kept).toBe(0);
    expect(log.events('usage.record_failed')).toHaveLength(2);
    expect(log.events('usage.record_deferred')).toEqual([]);
    expect(log.events('usage.lost')).toEqual([]);
  });

  it('says at close what the store never took', async () => {
    const store = new OutageStore();
    const log = new RecordingLogger();
    const usage = new RetryingUsageStore({ store, log, retryMs: 60_000 });
    store.down = true;
    await usage.record(reply('web:a', 100), AT);
    await usage.record(reply('web:a', 20), new Date('2026-12-04T11:00:00Z'));
    await usage.close();
    expect(log.events('usage.lost')).toMatchObject([
      { level: 'error', fields: { records: 2, calls: 2, promptTokens: 120, completionTokens: 20 } },
    ]);
  });

  it('stops within its bound when the store does not answer, and counts the record in flight as lost', async () => {
    const log = new RecordingLogger();
    let down = true;
    const hanging: UsageStore = {
      record: async () => {
        if (down) throw new Error('connect ECONNREFUSED');
        await new Promise(() => {});
      },
      totalsSince: async () => [],
      totalsIn: async () => [],
    };
    const usage = new RetryingUsageStore({ store: hanging, log, retryMs: 60_000 });
    await usage.record(reply('web:a', 100), AT);
    down = false;
    await usage.close(20);
    expect(log.events('usage.lost')).toMatchObject([{ fields: { records: 1, promptTokens: 100 } }]);
  });

  it('loses nothing kept for an hour while that hour is being written', async () => {
    const store = new OutageStore();
    // The first write the store would take waits until `release`.
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let holding = true;
    const slow: UsageStore = {
      record: async (u, at) => {
        if (!store.down && holding) {
          holding = false;
          await held;
        }
        await store.record(u, at);
      },
      totalsSince: (s, k) => store.totalsSince(s, k),
      totalsIn: (q) => store.totalsIn(q),
    };
    const usage = new RetryingUsageStore({ store: slow, log: new RecordingLogger(), retryMs: 60_000 });
    store.down = true;
    await usage.record(reply('web:a', 100), AT);
    store.down = false;
    const read = spentBy(usage, 'web:a');
    // The kept record is being written; the store fails a second record meanwhile.
    store.down = true;
    await usage.record(reply('web:a', 7), AT);
    store.down = false;
    release();
    await read;
    expect(await spentBy(usage, 'web:a')).toEqual({ calls: 2, promptTokens: 107 });
  });

  it('counts every record exactly once, whatever the outages between them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constant('record' as const),
              channel: fc.integer({ min: 0, max: 3 }),
              tokens: fc.nat(1_000),
              hour: fc.integer({ min: 0, max: 2 }),
            }),
            fc.record({ kind: fc.constant('toggle' as const) }),
            fc.record({ kind: fc.constant('read' as const) }),
          ),
          { maxLength: 40 },
        ),
        async (steps) => {
          const store = new OutageStore();
          const usage = new RetryingUsageStore({ store, log: new RecordingLogger(), retryMs: 60_000 });
          const expected = new Map<string, number>();
          for (const step of steps) {
            if (step.kind === 'toggle') store.down = !store.down;
            else if (step.kind === 'read') await usage.totalsSince(EPOCH).catch(() => []);
            else {
              const key = `web:${step.channel}`;
              await usage.record(reply(key, step.tokens), new Date(AT.getTime() + step.hour * 3_600_000));
              expected.set(key, (expected.get(key) ?? 0) + step.tokens);
            }
          }
          store.down = false;
          const totals = await usage.totalsSince(EPOCH);
          const actual = new Map<string, number>();
          for (const t of totals) actual.set(t.channelKey, (actual.get(t.channelKey) ?? 0) + t.promptTokens);
          expect(actual).toEqual(expected);
          await usage.close();
        },
      ),
      { numRuns: 200 },
    );
  });
});
