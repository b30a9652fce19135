/**
 * Discord's typing indicator lasts about 10 s (or until the bot posts), and a model can take longer
 * than that. `start` sends it at once and again every `refreshMs` (8 s: a refresh lands before the
 * last one runs out, with room for a slow request) until `stop` (the reply is being posted), or until
 * `maxMs` have passed since the last `start` (a turn that ends without posting must not leave the bot
 * "typing" forever; the bot calls `typing` before each model call, so a long tool loop keeps it on).
 * A refresh that fails ends the indicator for that channel. Each channel's entry lives only while its
 * indicator is on, so the map holds at most the turns in flight.
 */
import type { Logger } from '@ebb/core';

export interface TypingKeepAliveOptions {
  readonly refreshMs: number;
  readonly maxMs: number;
  readonly log: Logger;
}

interface Indicator {
  /** Unset while the first request is in flight. */
  timer: NodeJS.Timeout | undefined;
  /** `performance.now()` past which the indicator is no longer refreshed. */
  until: number;
}

export type TypingStopReason = 'sent' | 'expired' | 'failed' | 'stopped';

export class TypingKeepAlive {
  readonly #options: TypingKeepAliveOptions;
  readonly #on = new Map<string, Indicator>();

  constructor(options: TypingKeepAliveOptions) {
    this.#options = options;
  }

  /** Shows typing in `channelKey` now and keeps it up; a second call only extends it. Never throws. */
  async start(channelKey: string, send: () => Promise<void>): Promise<void> {
    const until = performance.now() + this.#options.maxMs;
    const current = this.#on.get(channelKey);
    if (current) {
      current.until = until;
      return;
    }
    // Registered before the first request, so a `stop` (the reply) arriving meanwhile wins.
    const indicator: Indicator = { timer: undefined, until };
    this.#on.set(channelKey, indicator);
    const sent = await this.#send(channelKey, send);
    if (this.#on.get(channelKey) !== indicator) return;
    if (!sent) {
      this.stop(channelKey, 'failed');
      return;
    }
    indicator.timer = setInterval(() => {
      if (performance.now() > indicator.until) {
        this.stop(channelKey, 'expired');
        return;
      }
      void this.#send(channelKey, send).then((ok) => {
        if (!ok && this.#on.get(channelKey) === indicator) this.stop(channelKey, 'failed');
      });
    }, this.#options.refreshMs);
    indicator.timer.unref();
  }

  stop(channelKey: string, reason: TypingStopReason): void {
    const indicator = this.#on.get(channelKey);
    if (!indicator) return;
    clearInterval(indicator.timer);
    this.#on.delete(channelKey);
    this.#options.log.debug(
      { event: 'discord.typing_stopped', channel: channelKey, reason },
      'discord typing stopped',
    );
  }

  stopAll(): void {
    for (const channelKey of [...this.#on.keys()]) this.stop(channelKey, 'stopped');
  }

  async #send(channelKey: string, send: () => Promise<void>): Promise<boolean> {
    try {
      await send();
      return true;
    } catch (err) {
      this.#options.log.debug(
        { event: 'discord.typing_failed', err, channel: channelKey },
        'discord typing indicator failed',
      );
      return false;
    }
  }
}
