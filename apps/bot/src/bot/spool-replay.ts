/**
 * Messages the archive could not take: kept in the inbound spool (the channel is told once per
 * outage), and replayed into the archive in order, before the channel's next turn and on a timer
 * that also finds spools this process did not write (another replica's, or a previous process's).
 *
 * A channel's new message goes into the archive only behind everything spooled before it: when the
 * spool cannot be read, that is "unknown", and the message is spooled behind the rest (never
 * archived ahead of them); until the spool has been listed once, every channel's turn reads it, since
 * a previous process may have left messages in any of them. An entry the archive refuses for good (an
 * error that is not retryable, `MAX_REPLAY_TRIES` times) would hold its channel in the spool forever:
 * it is moved to the spool's dead letters with one `spool.dead_lettered` error line, never dropped.
 * The archive being away (a retryable error) never counts as a try.
 */
import type { EbbConfig } from '@ebb/config';
import {
  codedErrorText,
  EbbError,
  type InboundSpool,
  isSpooledChange,
  type Logger,
  LruMap,
  type MessageChange,
  type Platform,
  type PlatformAdapter,
  type SpoolEntry,
  type SpooledItem,
  type SpooledMessage,
  spooledChange,
  type TurnResult,
} from '@ebb/core';
import type { BotCompaction } from './bot-compaction.js';
import type { ChannelActors } from './channel-actors.js';
import type { ChannelStates } from './channel-states.js';
import { openTurn } from './turn.js';

/** Said once per channel when the archive is away and messages are spooled, not once per message. */
export const CATCH_UP_NOTICE =
  "I can't reach my memory right now. I'm keeping what's said here and will catch up once it's back.";
const SPOOL_REPLAY_MS = 2_000;
const SPOOL_BATCH = 100;
/** Refusals of one spooled message (not counting the archive being away) before it is set aside. */
export const MAX_REPLAY_TRIES = 5;
/** Spooled messages whose refusals are being counted; a forgotten count starts again (more tries, never fewer). */
const MAX_COUNTED = 1_000;

export interface SpoolReplayOptions {
  readonly spool: InboundSpool;
  /** How often channels with spooled messages are replayed into the archive (default 2 s). */
  readonly intervalMs?: number;
  readonly config: () => EbbConfig;
  readonly logger: Logger;
  readonly actors: ChannelActors;
  readonly states: ChannelStates;
  readonly compaction: BotCompaction;
  /** The running adapter of a platform (it posts the catch-up notice). */
  readonly adapter: (platform: Platform) => PlatformAdapter;
  /** Applies a spooled deletion or edit (in the channel's actor, in order with its messages). */
  readonly applyChange: (change: MessageChange) => Promise<void>;
}

export class SpoolReplay {
  readonly #options: SpoolReplayOptions;
  /** Channels told `CATCH_UP_NOTICE` during the current outage (forgotten once caught up). */
  readonly #noticed = new Set<string>();
  /**
   * Channels that may have spooled messages: the ones this process spooled to, and the ones the
   * replay timer found in the spool (another replica's, or a previous process's). A turn reads the
   * spool only for these, so a healthy turn does no spool I/O.
   */
  readonly #spooled = new Set<string>();
  /** The spool has been listed once: a channel not in `#spooled` has nothing spooled. */
  #listed = false;
  /** Refusals so far, per spooled message (`<channel>\n<platform id>`). */
  readonly #tries = new LruMap<string, number>(MAX_COUNTED);
  /** A read of the spool failed and has not succeeded since (logged once per run of failures). */
  #readFailing = false;
  #replayTimer: NodeJS.Timeout | undefined;
  #replaying = false;

  constructor(options: SpoolReplayOptions) {
    this.#options = options;
  }

  /** Spooled messages (this process's or a previous one's) are replayed as soon as the store answers. */
  start(): void {
    this.#replayTimer = setInterval(
      () => void this.#replayAll(),
      this.#options.intervalMs ?? SPOOL_REPLAY_MS,
    );
    this.#replayTimer.unref();
  }

  stop(): void {
    clearInterval(this.#replayTimer);
  }

  /**
   * Keeps a message the archive could not take in the spool, and tells the channel once per outage.
   * Undefined when the spool cannot take it either (Redis down too).
   */
  async keep(message: SpooledMessage, platform: Platform): Promise<TurnResult | undefined> {
    if (!(await this.#push(message, 'a message'))) return undefined;
    if (!this.#noticed.has(message.channelKey) && message.role === 'user') {
      this.#noticed.add(message.channelKey);
      await this.#options
        .adapter(platform)
        .send(message.channelKey, CATCH_UP_NOTICE)
        .catch(() => {});
    }
    return { reply: null, archived: 'spooled' };
  }

  /**
   * Keeps a deletion or an edit the archive could not take (or that must wait behind spooled
   * messages), without telling the channel; false when the spool refuses it too.
   */
  keepChange(change: MessageChange): Promise<boolean> {
    return this.#push(spooledChange(change), 'a message change');
  }

  /**
   * Pushes `item` to the spool; false when the spool refuses it too, logged when `what` names it (the
   * caller of `keepReply` logs the reply's fate itself).
   */
  async #push(item: SpooledItem, what?: string): Promise<boolean> {
    try {
      await this.#options.spool.push(item);
    } catch (err) {
      if (what !== undefined)
        this.#options.logger.error(
          { event: 'spool.push_failed', err, channel: item.channelKey },
          `could not spool ${what} either`,
        );
      return false;
    }
    this.#spooled.add(item.channelKey);
    return true;
  }

  /** Keeps a reply that is already posted but not archived, without telling the channel; false when refused. */
  keepReply(reply: SpooledMessage): Promise<boolean> {
    return this.#push(reply);
  }

  /**
   * Replays the channel's spooled messages into the archive, oldest first (a message archived before
   * is skipped on its platform id). True when nothing is left; false when the archive is still away,
   * or the spool cannot be read (then nothing may go ahead of what it holds). Runs in the channel's
   * actor.
   */
  async catchUp(key: string): Promise<boolean> {
    const { states, logger } = this.#options;
    if (this.#listed && !this.#spooled.has(key)) return true;
    let batch = await this.#peek(key);
    if (batch === undefined) return false;
    if (batch.length === 0) {
      this.#spooled.delete(key);
      return true;
    }
    let replayed = 0;
    try {
      const turn = await openTurn(key, this.#options.config(), states, logger.child({ channel: key }));
      // Entries taken once: one the spool failed to remove comes back, and must not loop forever.
      const seen = new Set<string>();
      while (batch.length > 0) {
        const fresh = batch.filter((e) => !seen.has(e.id));
        if (fresh.length === 0) return false;
        const archived: string[] = [];
        for (const entry of fresh) {
          seen.add(entry.id);
          try {
            const item = entry.message;
            if (isSpooledChange(item)) await this.#options.applyChange(item.change);
            else await states.append(turn, item);
          } catch (err) {
            // What went in before it leaves the spool first (a failed removal only replays it as a duplicate).
            await this.#options.spool.remove(key, archived.splice(0)).catch(() => {});
            if (!(await this.#setAside(key, entry, err))) throw err;
            continue;
          }
          archived.push(entry.id);
          replayed++;
        }
        await this.#options.spool.remove(key, archived);
        const next = await this.#peek(key);
        if (next === undefined) return false;
        batch = next;
      }
      await this.#options.compaction.monitor(turn);
    } catch (err) {
      states.forget(key);
      if (replayed > 0)
        logger.warn({ event: 'spool.replay_stopped', err, channel: key, replayed }, 'spool replay stopped');
      return false;
    }
    this.#spooled.delete(key);
    this.#noticed.delete(key);
    logger.info(
      { event: 'spool.replayed', channel: key, messages: replayed },
      `archived ${replayed} spooled messages of ${key}`,
    );
    return true;
  }

  /** The channel's oldest spooled messages; undefined when the spool cannot say (unknown, not empty). */
  async #peek(key: string): Promise<readonly SpoolEntry[] | undefined> {
    try {
      const batch = await this.#options.spool.peek(key, SPOOL_BATCH);
      this.#readFailing = false;
      return batch;
    } catch (err) {
      this.#spooled.add(key);
      if (!this.#readFailing) {
        this.#readFailing = true;
        this.#options.logger.warn(
          { event: 'spool.read_failed', err, channel: key },
          'could not read the inbound spool; new messages wait behind what it holds',
        );
      }
      return undefined;
    }
  }

  /**
   * After the archive refused `entry`: true when it was moved to the dead letters (its channel can go
   * on), false when it stays to be tried again (the archive away, or tries left).
   */
  async #setAside(key: string, entry: SpoolEntry, err: unknown): Promise<boolean> {
    if (err instanceof EbbError && err.retryable) return false;
    const logger = this.#options.logger;
    const { platformMessageId } = entry.message;
    const counted = `${key}\n${platformMessageId}`;
    const tries = (this.#tries.get(counted) ?? 0) + 1;
    if (tries < MAX_REPLAY_TRIES) {
      this.#tries.set(counted, tries);
      logger.warn(
        { event: 'spool.replay_refused', err, channel: key, platformMessageId, tries },
        `the archive refused a spooled message (try ${tries} of ${MAX_REPLAY_TRIES})`,
      );
      return false;
    }
    const reason = codedErrorText(err);
    let where: string;
    try {
      where = await this.#options.spool.deadLetter(key, entry, reason);
    } catch (deadLetterErr) {
      logger.error(
        { event: 'spool.dead_letter_failed', err: deadLetterErr, channel: key, platformMessageId },
        'could not move a spooled message the archive refuses aside; it stays in the spool',
      );
      return false;
    }
    this.#tries.delete(counted);
    logger.error(
      { event: 'spool.dead_lettered', err, channel: key, platformMessageId, tries, where },
      `the archive refused a spooled message ${tries} times; moved it to ${where}`,
    );
    return true;
  }

  /** Every channel with spooled messages, each in its actor; one round at a time. */
  async #replayAll(): Promise<void> {
    if (this.#replaying) return;
    this.#replaying = true;
    try {
      let keys: readonly string[] = [];
      try {
        keys = await this.#options.spool.channels();
        this.#listed = true;
      } catch {
        // Listed on a later round; meanwhile every channel's turn reads the spool.
      }
      for (const key of keys) this.#spooled.add(key);
      // Once the bot stops taking turns, a replay waits for the next start.
      await Promise.all(
        keys.map((key) =>
          this.#options.actors.run(
            key,
            () => this.catchUp(key),
            async () => false,
          ),
        ),
      );
    } finally {
      this.#replaying = false;
    }
  }
}
