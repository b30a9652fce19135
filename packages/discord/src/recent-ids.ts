/**
 * The ids of the last `capacity` messages delivered, least recently seen dropped first. Discord's
 * gateway delivers at least once (a RESUME may replay a dispatch the client already handled); this
 * drops the repeat before it reaches the handler.
 */
export class RecentIds {
  readonly #capacity: number;
  readonly #ids = new Set<string>();

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    }
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#ids.size;
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }

  /** Remembers `id`; false when it was already remembered (a repeat). */
  remember(id: string): boolean {
    const repeat = this.#ids.delete(id);
    this.#ids.add(id);
    if (this.#ids.size > this.#capacity) {
      const oldest = this.#ids.values().next();
      if (!oldest.done) this.#ids.delete(oldest.value);
    }
    return !repeat;
  }
}
