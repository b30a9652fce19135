/**
 * A transcript's own clock, as `ebb simulate` and the prompt-cache bench replay it: time moves as
 * the timestamps do where they parse (else a second a message), and a timestamp earlier than the
 * one before counts as no time passing. Real exports jump back (a 12-hour clock at noon, logs merged
 * out of order): a clock held at the later time until they caught up would stand still for hours,
 * so every message would look like a burst to the pace, no cooldown would ever end and no cache
 * would expire.
 */
export class TranscriptClock {
  #now = 0;
  /** The last timestamp that parsed, as written (`#now` follows its differences). */
  #lastStamp: number | undefined;

  /** The clock at the message stamped `ts` (epoch ms from the first stamp that parses). */
  advance(ts: string | undefined): number {
    const parsed = ts === undefined ? Number.NaN : Date.parse(ts);
    if (Number.isNaN(parsed)) {
      this.#now += 1000;
      return this.#now;
    }
    this.#now =
      this.#lastStamp === undefined
        ? Math.max(this.#now, parsed)
        : this.#now + Math.max(0, parsed - this.#lastStamp);
    this.#lastStamp = parsed;
    return this.#now;
  }
}
