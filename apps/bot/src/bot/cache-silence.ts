/**
 * When each channel's provider cache goes cold. The bot notes every reply it sends (`replied`)
 * with the channel's cache lifetime (`cache_ttl_seconds`); a check every `CACHE_SILENCE_CHECK_MS`
 * hands `onCold` each channel whose lifetime has run out since, once per silence, so a pass that is
 * due soon can land while it breaks nothing (`ChannelCompactor.onSilence`). A reply since, by this
 * process, pushes the moment on; one by another replica is seen by the caller, which reads the
 * channel's context before it acts.
 *
 * Bounded like every map keyed by channel: a channel pushed out (or not answered since this
 * process started) gets its pass on its next turn, as it would without this.
 */
import { Periodic } from '@ebb/compaction';
import { LruMap } from '@ebb/core';
import type { Logger } from '@ebb/logger';

/** How often the moments are checked: a channel's cache is found cold at most this late. */
export const CACHE_SILENCE_CHECK_MS = 30_000;
/** Channels whose last reply is remembered. */
const MAX_CHANNELS = 10_000;

export interface CacheSilenceOptions {
  readonly onCold: (channelKey: string) => void;
  readonly logger: Logger;
  readonly now?: () => number;
  readonly checkMs?: number;
}

export class CacheSilence {
  /** When each channel's cache goes cold (epoch ms). */
  readonly #coldAt = new LruMap<string, number>(MAX_CHANNELS);
  readonly #options: CacheSilenceOptions;
  readonly #now: () => number;
  readonly #checks: Periodic;

  constructor(options: CacheSilenceOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#checks = new Periodic(async () => this.check(), {
      intervalMs: options.checkMs ?? CACHE_SILENCE_CHECK_MS,
      onError: (err) =>
        options.logger.warn(
          { event: 'compaction.silence_check_failed', err },
          'could not check for cold caches',
        ),
    });
  }

  /** The channel was prompted at `at`: its cache keeps the prompt for `ttlMs`. */
  replied(channelKey: string, at: number, ttlMs: number): void {
    this.#coldAt.set(channelKey, at + ttlMs);
  }

  /** Hands `onCold` every channel whose cache has gone cold, and forgets it until its next reply. */
  check(): void {
    const now = this.#now();
    const cold: string[] = [];
    for (const [key, at] of this.#coldAt.entries()) if (at < now) cold.push(key);
    for (const key of cold) {
      this.#coldAt.delete(key);
      this.#options.onCold(key);
    }
  }

  start(): void {
    this.#checks.start();
  }

  async stop(): Promise<void> {
    await this.#checks.stop();
  }
}
