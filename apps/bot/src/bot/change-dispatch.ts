/**
 * A deletion or an edit from a platform, dispatched to the actor of the channel it names, in order
 * with that channel's turns: behind what the channel spooled (the change may name a spooled
 * message), else applied (`message-changes.ts`); a change the archive could not take is spooled and
 * applied again in full once it is back (every step is idempotent).
 */
import type { Logger, MessageChange, MessageChangeResult } from '@ebb/core';
import { BotError } from '../errors.js';
import { changeResult } from './change-report.js';
import type { ChannelActors } from './channel-actors.js';
import type { ChannelStates } from './channel-states.js';
import type { MessageChanges } from './message-changes.js';
import type { SpoolReplay } from './spool-replay.js';

export interface ChangeDispatchOptions {
  readonly actors: ChannelActors;
  readonly changes: MessageChanges;
  readonly states: ChannelStates;
  readonly logger: Logger;
  /** The spool's replay (it applies the spooled changes through `apply`); none without a spool. */
  readonly replay: SpoolReplay | undefined;
}

export class ChangeDispatch {
  readonly #options: ChangeDispatchOptions;

  constructor(options: ChangeDispatchOptions) {
    this.#options = options;
  }

  /**
   * A deletion or an edit, in the channel's actor: behind what is spooled (it may name a spooled
   * message), else applied now; when the store fails part-way it is spooled and applied again in
   * full once the archive is back (every step is idempotent).
   */
  async change(change: MessageChange): Promise<MessageChangeResult> {
    const key = change.channelKey;
    const { replay } = this.#options;
    if (replay && !(await replay.catchUp(key))) return this.keep(change, undefined);
    try {
      return mergedResult(await this.apply(change));
    } catch (err) {
      this.#options.states.forget(key);
      return await this.keep(change, err);
    }
  }
  /**
   * Applies a change where its messages are (`MessageChanges.locate`), in the actor of `change`'s
   * channel: the part found in a thread (a change that named no thread) goes through the thread's
   * actor, behind its turns and its spool, as a change that named the thread would. That wait never
   * closes a cycle: a located change names its conversation, and waits on no other actor.
   */
  async apply(change: MessageChange): Promise<MessageChangeResult[]> {
    const results: MessageChangeResult[] = [];
    for (const located of await this.#options.changes.locate(change)) {
      if (located.channelKey === change.channelKey)
        results.push(changeResult(await this.#options.changes.apply(located)));
      else
        results.push(
          await this.#options.actors.run(
            located.channelKey,
            () => this.change(located),
            () => this.keep(located, undefined),
          ),
        );
    }
    return results;
  }
  /** Spools a change the archive could not take; throws when there is no spool or it refuses too. */
  async keep(change: MessageChange, err: unknown): Promise<MessageChangeResult> {
    const kept = (await this.#options.replay?.keepChange(change)) === true;
    const fields = { event: 'message.change_spooled', err, channel: change.channelKey, kind: change.kind };
    if (kept) {
      this.#options.logger.warn(fields, 'the archive could not take a deletion or an edit now; spooled it');
      return { outcome: 'spooled' };
    }
    throw new BotError('a deletion or edit could not be applied or spooled', {
      code: 'change_not_kept',
      retryable: true,
      cause: err,
    });
  }
}

/**
 * One answer for a change applied in several conversations (a change that named no thread): applied
 * when any part was, with what every part reached.
 */
function mergedResult(results: readonly MessageChangeResult[]): MessageChangeResult {
  const applied = results.filter((r) => r.outcome === 'applied');
  if (applied.length === 0) return results[0] ?? { outcome: 'unknown' };
  if (applied.length === 1) return applied[0] as MessageChangeResult;
  const sum = (pick: (r: NonNullable<MessageChangeResult['reached']>) => number) =>
    applied.reduce((n, r) => n + (r.reached === undefined ? 0 : pick(r.reached)), 0);
  return {
    outcome: 'applied',
    ...(applied[0]?.takeBack === undefined ? {} : { takeBack: applied[0].takeBack }),
    reached: {
      messages: sum((r) => r.messages),
      memories: sum((r) => r.memories),
      checkpoints: sum((r) => r.checkpoints),
      summaries: sum((r) => r.summaries),
    },
    pending: applied.reduce((n, r) => n + (r.pending ?? 0), 0),
  };
}
