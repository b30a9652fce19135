/**
 * A replica's appends to a channel, heard by the other replicas as they happen (`AppendFeed`), so
 * the turn that lands on another replica next finds that replica's copy of the channel current and
 * reads nothing back from Postgres. Redis pub/sub on `<p>:context-appended`; the message is
 * `{"from":…,"channelKey":…,"appended":{generation, headSeq, tokens, raw}}` with the appended
 * messages as the working context holds them (clipped copies), so this is the one pub/sub channel
 * that carries message text: in flight only, never stored (pub/sub keeps nothing), and never logged.
 *
 * Publishing goes on the connection the channel leases are released on, and listening on the one
 * they are heard on: Redis keeps one connection's commands in order and delivers to one subscriber
 * in order, so a replica woken for a channel's lease has heard the appends of the turn before it.
 * A notice is best effort: one that is lost, malformed, oversized or does not continue the hearer's
 * copy costs one read of the tail at that replica's next append (`ChannelStates`).
 */
import { randomUUID } from 'node:crypto';
import {
  type AppendFeed,
  type ContextDelta,
  type ContextMessage,
  type Logger,
  SILENT_LOGGER,
} from '@ebb/core';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { PubSubListeners } from './pubsub-listeners.js';
import { redisKeys } from './redis-keys.js';

/**
 * A notice past this size is not sent (its hearers read the tail instead): a tool step with a large
 * result, clipped to `message_max_tokens`, stays far below it.
 */
export const MAX_APPEND_NOTICE_BYTES = 256 * 1024;

const ToolCall = z.strictObject({ id: z.string(), name: z.string(), arguments: z.string() });

/** A `ContextMessage` on the wire. */
const AppendedMessage = z.strictObject({
  seq: z.int().min(1),
  role: z.enum(['user', 'assistant', 'tool']),
  author: z.string(),
  text: z.string(),
  ts: z.string().optional(),
  toolCalls: z.array(ToolCall).optional(),
  toolCallId: z.string().optional(),
  tokens: z.int().min(0),
  omittedTokens: z.int().min(0).optional(),
  stubbed: z.literal(true).optional(),
});

const AppendNotice = z.strictObject({
  from: z.string().min(1),
  channelKey: z.string().min(1).max(512),
  appended: z.strictObject({
    generation: z.int().min(0),
    headSeq: z.int().min(1),
    tokens: z.int().min(0),
    raw: z.array(AppendedMessage).min(1),
  }),
});

type Listener = (channelKey: string, appended: ContextDelta) => void;

export interface RedisAppendFeedOptions {
  /** Connection to PUBLISH on: the channel leases' own, so a notice goes before the lease's release. */
  readonly publisher: Redis;
  /** A subscribed connection (the channel leases' listener); others may listen on it too. */
  readonly subscriber: Redis;
  /** Key prefix (default `ebb`). */
  readonly prefix?: string;
  readonly logger?: Logger;
}

export class RedisAppendFeed implements AppendFeed {
  readonly #publisher: Redis;
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #log: Logger;
  /** This feed's own notices come back on the subscription; they are not news here. */
  readonly #self = randomUUID();
  readonly #listeners: PubSubListeners<Parameters<Listener>>;
  readonly #onMessage = (redisChannel: string, message: string) => {
    if (redisChannel === this.#channel && this.#listeners.size > 0) this.#deliver(message);
  };
  #malformedLogged = false;

  constructor(options: RedisAppendFeedOptions) {
    this.#publisher = options.publisher;
    this.#subscriber = options.subscriber;
    this.#channel = redisKeys(options.prefix).contextAppended;
    this.#log = options.logger ?? SILENT_LOGGER;
    this.#listeners = new PubSubListeners(this.#subscriber, this.#channel, this.#log);
    this.#subscriber.on('message', this.#onMessage);
  }

  publish(channelKey: string, appended: ContextDelta): void {
    if (this.#publisher.status !== 'ready') return;
    const { generation, headSeq, tokens, raw } = appended;
    const message = JSON.stringify({
      from: this.#self,
      channelKey,
      appended: { generation, headSeq, tokens, raw: raw.map(onTheWire) },
    });
    if (Buffer.byteLength(message) > MAX_APPEND_NOTICE_BYTES) return;
    this.#publisher.publish(this.#channel, message).catch(() => {});
  }

  subscribe(listener: Listener): Promise<() => Promise<void>> {
    return this.#listeners.add(listener);
  }

  /** Stops listening (the connections are their owner's to close). */
  async close(): Promise<void> {
    this.#subscriber.off('message', this.#onMessage);
    await this.#listeners.close();
  }

  #deliver(message: string): void {
    const notice = parseNotice(message, this.#self);
    if (notice === 'own') return;
    if (typeof notice === 'string') {
      // Once per process: a replica of another version sending another shape would say it per
      // append. No parser's message is logged: JSON.parse's quotes the input, message text.
      if (!this.#malformedLogged) {
        this.#malformedLogged = true;
        this.#log.warn(
          { event: 'context.append_notice_malformed', reason: notice, redisChannel: this.#channel },
          'ignored a malformed append notice (said once); replicas read the messages back instead',
        );
      }
      return;
    }
    this.#listeners.deliver(notice.channelKey, notice.channelKey, notice.appended as ContextDelta);
  }
}

/** Every field of `ContextMessage`, so one added there fails here until it is sent (undefined ones are not). */
type OnTheWire = { readonly [K in keyof Required<ContextMessage>]: ContextMessage[K] | undefined };

/**
 * A context message's own fields only: an entry may carry what its turn's message had besides (its
 * channel key, its platform's fields), which is neither the hearers' business nor in a load.
 */
function onTheWire(m: ContextMessage): OnTheWire {
  const { seq, role, author, text, ts, toolCalls, toolCallId, tokens, omittedTokens, stubbed } = m;
  return { seq, role, author, text, ts, toolCalls, toolCallId, tokens, omittedTokens, stubbed };
}

/**
 * The notice; `own` for one this feed (`self`) sent, not validated (every append comes back once);
 * else what is wrong with it: not JSON, or where its shape differs (paths only).
 */
function parseNotice(message: string, self: string): z.infer<typeof AppendNotice> | 'own' | string {
  let json: unknown;
  try {
    json = JSON.parse(message);
  } catch {
    return 'not JSON';
  }
  if ((json as { from?: unknown } | null)?.from === self) return 'own';
  const parsed = AppendNotice.safeParse(json);
  if (parsed.success) return parsed.data;
  return `unexpected shape at ${parsed.error.issues.map((issue) => issue.path.join('.') || '(root)').join(', ')}`;
}
