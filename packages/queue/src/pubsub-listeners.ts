/**
 * The listeners of one Redis pub/sub channel on a subscribed connection (which other channels'
 * listeners may share): subscribed with the first listener, unsubscribed when the last leaves, and
 * each message handed to every listener in turn (one that throws is logged; the others still get it).
 */
import type { Logger } from '@ebb/core';
import type { Redis } from 'ioredis';
import { toError } from './job-driver.js';

export class PubSubListeners<A extends unknown[]> {
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #log: Logger;
  readonly #listeners = new Set<(...args: A) => void>();
  #subscription: Promise<unknown> | undefined;

  constructor(subscriber: Redis, channel: string, log: Logger) {
    this.#subscriber = subscriber;
    this.#channel = channel;
    this.#log = log;
  }

  get size(): number {
    return this.#listeners.size;
  }

  /** Resolves once Redis confirmed the subscription; the returned function takes the listener off. */
  async add(listener: (...args: A) => void): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    this.#subscription ??= this.#subscriber.subscribe(this.#channel);
    await this.#subscription;
    return async () => {
      if (!this.#listeners.delete(listener) || this.#listeners.size > 0) return;
      this.#subscription = undefined;
      await this.#subscriber.unsubscribe(this.#channel).catch(() => {});
    };
  }

  /** Hands a message to every listener; `channelKey` names the chat channel in a listener's failure. */
  deliver(channelKey: string, ...args: A): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(...args);
      } catch (err) {
        this.#log.error(
          { event: 'context.listener_failed', err: toError(err), channel: channelKey },
          `listener of ${this.#channel} threw`,
        );
      }
    }
  }

  /** Drops every listener and unsubscribes (the connection is its owner's to close). */
  async close(): Promise<void> {
    this.#listeners.clear();
    const subscribed = this.#subscription !== undefined;
    this.#subscription = undefined;
    if (subscribed) await this.#subscriber.unsubscribe(this.#channel).catch(() => {});
  }
}
