/**
 * The one bounded cache of the tree: a map that keeps at most `capacity` entries and forgets the
 * least recently used first. Every in-memory map keyed by something outsiders choose (a channel, a
 * user, a message id, a client address) is one of these, so no process grows with the traffic it has
 * seen. Small and in-process: it remembers recent things, never anything durable.
 *
 * Entries may also be weighed (`set(key, value, weight)`, in whatever unit the owner bounds, bytes
 * for the bot's working contexts), and the map then keeps their total at most `maxWeight` as well:
 * when the entries differ in size by orders of magnitude, a count is the wrong bound. An entry
 * heavier than `maxWeight` on its own is not kept.
 */
export interface LruBounds {
  /** Most entries kept. */
  readonly capacity: number;
  /** Most total weight kept (default: no bound beyond the count). */
  readonly maxWeight?: number;
}

export class LruMap<K, V> {
  readonly capacity: number;
  #maxWeight: number;
  readonly #entries = new Map<K, { value: V; weight: number }>();
  #weight = 0;
  #evictions = 0;

  constructor(bounds: number | LruBounds) {
    const { capacity, maxWeight = Number.POSITIVE_INFINITY } =
      typeof bounds === 'number' ? { capacity: bounds } : bounds;
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
    this.#maxWeight = checkedWeightBound(maxWeight);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The total weight of the entries kept (their count when none was weighed). */
  get weight(): number {
    return this.#weight;
  }

  get maxWeight(): number {
    return this.#maxWeight;
  }

  /** Entries forgotten to stay within the bounds, since the map was made (not those deleted). */
  get evictions(): number {
    return this.#evictions;
  }

  /** A new weight bound (a reloaded setting); entries past it go at once, least recently used first. */
  set maxWeight(maxWeight: number) {
    this.#maxWeight = checkedWeightBound(maxWeight);
    this.#evict();
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /**
   * The value, leaving the entry where it is in the order: for a look that is not a use (another
   * replica's traffic reaching a cached channel), so it keeps nothing from being evicted.
   */
  peek(key: K): V | undefined {
    return this.#entries.get(key)?.value;
  }

  /**
   * A kept entry's new weight, in its place in the order (`peek`'s counterpart); the least recently
   * used go while the map is past its weight bound, this one too when it is the oldest. False when
   * the key is not kept.
   */
  reweigh(key: K, weight: number): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    if (!(weight >= 0) || !Number.isFinite(weight)) {
      throw new RangeError(`weight must be a finite number >= 0, got ${weight}`);
    }
    this.#weight += weight - entry.weight;
    entry.weight = weight;
    this.#evict();
    return true;
  }

  /** The value, marking the entry as recently used. */
  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /**
   * Sets the value (weighing `weight`, default 1) as the most recently used; the least recently used
   * go while the map is past its capacity or its weight bound.
   */
  set(key: K, value: V, weight = 1): this {
    if (!(weight >= 0) || !Number.isFinite(weight)) {
      throw new RangeError(`weight must be a finite number >= 0, got ${weight}`);
    }
    this.delete(key);
    this.#entries.set(key, { value, weight });
    this.#weight += weight;
    this.#evict();
    return this;
  }

  delete(key: K): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#entries.delete(key);
    this.#weight -= entry.weight;
    return true;
  }

  /** The value, computed and remembered when missing. */
  /** The entries, least recently used first; reading them does not make them recent. */
  *entries(): IterableIterator<[K, V]> {
    for (const [key, entry] of this.#entries) yield [key, entry.value];
  }

  getOrSet(key: K, make: () => V): V {
    if (this.#entries.has(key)) return this.get(key) as V;
    const value = make();
    this.set(key, value);
    return value;
  }

  #evict(): void {
    while (this.#entries.size > this.capacity || this.#weight > this.#maxWeight) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) return;
      this.delete(oldest.value);
      this.#evictions += 1;
    }
  }
}

function checkedWeightBound(maxWeight: number): number {
  if (!(maxWeight >= 0)) throw new RangeError(`maxWeight must be a number >= 0, got ${maxWeight}`);
  return maxWeight;
}
