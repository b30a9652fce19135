/**
 * Discord snowflakes: 64-bit ids whose top 42 bits are milliseconds since the Discord epoch
 * (2015-01-01T00:00:00Z), then 5 bits of worker, 5 of process and 12 of increment. discord.js derives
 * `createdAt` from them, so the fake mints real ones.
 */

export const DISCORD_EPOCH_MS = 1_420_070_400_000;

const MAX_INCREMENT = 0xfff;

/** The snowflake for `timestampMs` with the given increment (0–4095), worker and process 0. */
export function snowflakeAt(timestampMs: number, increment = 0): string {
  if (!Number.isInteger(timestampMs) || timestampMs < DISCORD_EPOCH_MS) {
    throw new RangeError(`a snowflake timestamp must be an integer at or after ${DISCORD_EPOCH_MS}`);
  }
  if (!Number.isInteger(increment) || increment < 0 || increment > MAX_INCREMENT) {
    throw new RangeError(`a snowflake increment must be an integer from 0 to ${MAX_INCREMENT}`);
  }
  return ((BigInt(timestampMs - DISCORD_EPOCH_MS) << 22n) | BigInt(increment)).toString();
}

/** Milliseconds since the Unix epoch at which `id` was minted. */
export function snowflakeTimestamp(id: string): number {
  return Number(BigInt(id) >> 22n) + DISCORD_EPOCH_MS;
}

/** Mints strictly increasing snowflakes, as one Discord worker would. */
export class SnowflakeGenerator {
  readonly #now: () => number;
  #lastMs = 0;
  #increment = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  next(): string {
    let ms = Math.max(this.#now(), this.#lastMs);
    if (ms === this.#lastMs) {
      this.#increment += 1;
      if (this.#increment > MAX_INCREMENT) {
        // 4,096 ids in one millisecond: borrow the next millisecond, as the ids must keep growing.
        ms += 1;
        this.#increment = 0;
      }
    } else {
      this.#increment = 0;
    }
    this.#lastMs = ms;
    return snowflakeAt(ms, this.#increment);
  }
}
