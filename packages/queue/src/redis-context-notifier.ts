/**
 * "A channel's context changed" (a splice or a truncation), from whoever changed it to every bot, so
 * a bot reloads the channel's working context before its next turn. The message is
 * `{"channelKey":…,"generation":…}`, never message text. Delivery is best effort: a bot also
 * compares the stored generation before a turn, so a lost message costs one reload later.
 *
 * `RedisContextNotifier` uses Redis pub/sub on `<prefix>:context-changed`, publishing on an ordinary
 * connection and listening on a dedicated one (a subscribed connection can run nothing else).
 * `InProcessContextNotifier` does the same inside one process for embedded mode.
 */
import { EventEmitter } from 'node:events';
import { type ContextNotifier, type Logger, SILENT_LOGGER } from '@ebb/core';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { toError } from './job-driver.js';
import { PubSubListeners } from './pubsub-listeners.js';
import { assertRedisReady, closeRedis, createRedis } from './redis-connection.js';
import { redisKeys } from './redis-keys.js';

export const ContextChange = z.strictObject({
  channelKey: z.string().min(1).max(512),
  generation: z.int().min(0),
});
export type ContextChange = z.infer<typeof ContextChange>;

export type ContextChangeListener = (change: ContextChange) => void;

export interface RedisContextNotifierOptions {
  /** Connection to PUBLISH on (a `producer` one in the bot). */
  readonly publisher: Redis;
  /** A connection used for nothing but this subscription (`createRedis(url, { role: 'subscriber' })`). */
  readonly subscriber: Redis;
  /** Key prefix (default `ebb`). */
  readonly prefix?: string;
  readonly logger?: Logger;
}

export class RedisContextNotifier implements ContextNotifier {
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #log: Logger;
  readonly #listeners: PubSubListeners<[ContextChange]>;
  #owned = false;

  constructor(options: RedisContextNotifierOptions) {
    this.#publisher = options.publisher;
    this.#subscriber = options.subscriber;
    this.#channel = redisKeys(options.prefix).contextChanged;
    this.#log = options.logger ?? SILENT_LOGGER;
    this.#listeners = new PubSubListeners(this.#subscriber, this.#channel, this.#log);
    this.#subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.#channel) this.#deliver(message);
    });
  }

  /** A notifier with its own two connections, closed by `close()`. */
  static connect(
    url: string,
    options: { readonly prefix?: string; readonly logger?: Logger } = {},
  ): RedisContextNotifier {
    const logger = options.logger ?? SILENT_LOGGER;
    const notifier = new RedisContextNotifier({
      publisher: createRedis(url, { role: 'producer', logger, connectionName: 'ebb-notifier-pub' }),
      subscriber: createRedis(url, { role: 'subscriber', logger, connectionName: 'ebb-notifier-sub' }),
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      logger,
    });
    notifier.#owned = true;
    return notifier;
  }

  async publish(change: ContextChange): Promise<void> {
    const { channelKey, generation } = ContextChange.parse(change);
    assertRedisReady(this.#publisher, `publish a context change of ${channelKey}`);
    await this.#publisher.publish(this.#channel, JSON.stringify({ channelKey, generation }));
  }

  /** Resolves once Redis confirmed the subscription; the returned function unsubscribes. */
  subscribe(listener: ContextChangeListener): Promise<() => Promise<void>> {
    return this.#listeners.add(listener);
  }

  /** Drops every listener; closes the connections when `connect` opened them. */
  async close(): Promise<void> {
    await this.#listeners.close();
    if (this.#owned) await Promise.all([closeRedis(this.#publisher), closeRedis(this.#subscriber)]);
  }

  #deliver(message: string): void {
    let change: ContextChange;
    try {
      change = ContextChange.parse(JSON.parse(message));
    } catch (err) {
      this.#log.warn(
        { event: 'context.change_malformed', err: toError(err), redisChannel: this.#channel },
        'ignored a malformed context change',
      );
      return;
    }
    this.#listeners.deliver(change.channelKey, change);
  }
}

/** The same contract inside one process (embedded mode, tests). Listeners run during `publish`. */
export class InProcessContextNotifier implements ContextNotifier {
  readonly #events = new EventEmitter<{ change: [ContextChange] }>();
  readonly #log: Logger;

  constructor(options: { readonly logger?: Logger } = {}) {
    this.#log = options.logger ?? SILENT_LOGGER;
    this.#events.setMaxListeners(0);
  }

  async publish(change: ContextChange): Promise<void> {
    const { channelKey, generation } = ContextChange.parse(change);
    this.#events.emit('change', { channelKey, generation });
  }

  async subscribe(listener: ContextChangeListener): Promise<() => Promise<void>> {
    const guarded = (change: ContextChange) => {
      try {
        listener(change);
      } catch (err) {
        this.#log.error(
          { event: 'context.listener_failed', err: toError(err), channel: change.channelKey },
          'context change listener threw',
        );
      }
    };
    this.#events.on('change', guarded);
    return async () => {
      this.#events.off('change', guarded);
    };
  }
}
