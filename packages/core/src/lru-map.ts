/**
 * The one bounded cache of the tree: a map that keeps at most `capacity` entries and forgets the
 * least recently used first. Every in-memory map keyed by something outsiders choose (a channel, a
 * user, a message id, a client address) is one of these, so no process grows with the traffic it has
 * seen. Small and in-process: it remembers recent things, never anything durable.
 */
export class LruMap<K, V> {
  readonly capacity: number;
  readonly #entries = new Map<K, V>();

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** The value, marking the entry as recently used. */
  get(key: K): V | undefined {
    if (!this.#entries.has(key)) return undefined;
    const value = this.#entries.get(key) as V;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Sets the value as the most recently used; the least recently used goes past the capacity. */
  set(key: K, value: V): this {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    return this;
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  /** The value, computed and remembered when missing. */
  getOrSet(key: K, make: () => V): V {
    if (this.#entries.has(key)) return this.get(key) as V;
    const value = make();
    this.set(key, value);
    return value;
  }
}
