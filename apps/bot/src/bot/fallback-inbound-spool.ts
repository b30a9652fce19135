/**
 * `FallbackInboundSpool`, Redis with the file (`FileInboundSpool`, `file-inbound-spool.ts`): the rule
 * that keeps order and loses nothing. How the two stores' entries are merged into one order, and
 * their ids told apart, is `merge-spool-entries.ts`.
 *
 * 1. **The disk first.** Redis here may run without persistence, so an acknowledged message is
 *    written to the file (synced) and to Redis, the copy every replica can see; it is acknowledged
 *    when either took it. With the disk refusing (full, read-only), Redis alone holds it.
 * 2. **A channel replays oldest first across both stores.** A read merges the file's entries and
 *    Redis's by the messages' time, each store's own order kept; a message both hold is one entry
 *    (its two copies removed together).
 * 3. **A store that cannot be read is "unknown", never "empty".** The file is this process's whole
 *    record, so with Redis unreachable a channel replays from the file alone, unless Redis alone holds
 *    one of its messages (the disk refused it): then its read fails and the channel waits for Redis,
 *    spooling what arrives meanwhile behind it. A copy left in Redis is replayed when Redis is back,
 *    as a duplicate the archive skips (idempotent on the platform id). A file that cannot be read
 *    cannot be written either, so it holds nothing of this process's: Redis's entries go ahead (a
 *    broken disk must not hold every channel back); with both unreadable, the read fails.
 *
 * What this cannot order: while Redis is unreachable, a channel whose messages were spooled by two
 * replicas replays each replica's file on its own, so the two may interleave out of order (none is
 * lost); and a message Redis alone held in a previous process (the disk refused it) may replay after
 * newer ones if Redis is unreachable when it does.
 */
import type { InboundSpool, SpoolEntry, SpooledItem } from '@ebb/core';
import { mergeInOrder, splitIds } from './merge-spool-entries.js';

/** Redis (shared by every replica) with the file (this process's durable record): the rule is at the top. */
export class FallbackInboundSpool implements InboundSpool {
  readonly #shared: InboundSpool;
  readonly #local: InboundSpool;
  /**
   * Channels with a message Redis alone holds (the disk refused it): their replay order needs Redis's
   * answer. Dropped when a read of both stores finds the channel empty.
   */
  readonly #sharedOnly = new Set<string>();

  constructor(shared: InboundSpool, local: InboundSpool) {
    this.#shared = shared;
    this.#local = local;
  }

  async push(message: SpooledItem): Promise<void> {
    const [local, shared] = await Promise.allSettled([this.#local.push(message), this.#shared.push(message)]);
    if (local.status === 'fulfilled') return;
    if (shared.status === 'rejected') throw local.reason;
    this.#sharedOnly.add(message.channelKey);
  }

  async peek(channelKey: string, limit: number): Promise<SpoolEntry[]> {
    const [local, shared] = await Promise.allSettled([
      this.#local.peek(channelKey, limit),
      this.#shared.peek(channelKey, limit),
    ]);
    if (local.status === 'rejected' && shared.status === 'rejected') throw local.reason;
    // Redis unreadable is unknown, not empty: the file's entries go ahead only if it holds them all.
    if (shared.status === 'rejected' && this.#sharedOnly.has(channelKey)) throw shared.reason;
    // The file unreadable: nothing this process spooled is only there (a push to it fails too), so
    // Redis's entries go ahead rather than every channel waiting on a broken disk.
    const merged = mergeInOrder(
      local.status === 'fulfilled' ? local.value : [],
      shared.status === 'fulfilled' ? shared.value : [],
    ).slice(0, Math.max(0, limit));
    if (merged.length === 0 && shared.status === 'fulfilled') this.#sharedOnly.delete(channelKey);
    return merged;
  }

  async remove(channelKey: string, ids: readonly string[]): Promise<void> {
    const { local, shared } = splitIds(ids);
    await Promise.all([
      this.#local.remove(channelKey, local),
      // A copy left in Redis (Redis away) is archived already: it replays as a duplicate, skipped.
      this.#shared.remove(channelKey, shared).catch(() => {}),
    ]);
  }

  /** Either store's channels when the other cannot say: a channel missing is found on a later round. */
  async channels(): Promise<readonly string[]> {
    const [local, shared] = await Promise.allSettled([this.#local.channels(), this.#shared.channels()]);
    if (local.status === 'rejected' && shared.status === 'rejected') throw local.reason;
    const of = (r: PromiseSettledResult<readonly string[]>) => (r.status === 'fulfilled' ? r.value : []);
    return [...new Set([...of(local), ...of(shared)])];
  }

  /** Into the file's dead letters, or Redis's when the disk refuses; then out of both stores. */
  async deadLetter(channelKey: string, entry: SpoolEntry, reason: string): Promise<string> {
    const { local, shared } = splitIds([entry.id]);
    try {
      const where = await this.#local.deadLetter(
        channelKey,
        { id: local[0] ?? '', message: entry.message },
        reason,
      );
      await this.#shared.remove(channelKey, shared).catch(() => {});
      return where;
    } catch (err) {
      const [id] = shared;
      if (id === undefined) throw err;
      const where = await this.#shared.deadLetter(channelKey, { id, message: entry.message }, reason);
      await this.#local.remove(channelKey, local).catch(() => {});
      return where;
    }
  }

  /**
   * Both stores, or it fails: a store that could not be scrubbed (Redis away, a broken disk) may
   * still hold the text, so the take-back is not done until a later try reaches it.
   */
  async scrub(channelKey: string, platformMessageIds: readonly string[]): Promise<number> {
    const [local, shared] = await Promise.allSettled([
      this.#local.scrub(channelKey, platformMessageIds),
      this.#shared.scrub(channelKey, platformMessageIds),
    ]);
    if (local.status === 'rejected') throw local.reason;
    if (shared.status === 'rejected') throw shared.reason;
    return local.value + shared.value;
  }
}
