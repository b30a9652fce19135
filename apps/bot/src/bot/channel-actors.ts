/**
 * One actor per conversation: turns of a channel run one at a time, in arrival order; channels run
 * in parallel, so a busy channel never delays another. An actor is forgotten once its queue drains.
 *
 * Every task comes with its refusal: what it answers instead of running once the actors are closed
 * (the grace period of a stop ran out). `close` refuses the tasks still waiting at once, without
 * waiting for the turn that runs ahead of them, so a refused sender is answered even while that
 * turn is stuck; refusals of one channel run one at a time, in arrival order (a refused chat message
 * is spooled, and the spool keeps the order it is given).
 */
import { settleWithin } from '@ebb/core';

/** A task waiting behind its channel's running turn; `refuse` answers it instead. */
interface Waiting {
  refuse(): void;
}

export class ChannelActors {
  readonly #tails = new Map<string, Promise<unknown>>();
  /** Refusals under way, per channel (their own queue, so they keep the channel's order). */
  readonly #refusals = new Map<string, Promise<unknown>>();
  /** Tasks not started yet, in arrival order. */
  readonly #waiting = new Set<Waiting>();
  #closed = false;

  run<T>(channelKey: string, task: () => Promise<T>, refused: () => Promise<T>): Promise<T> {
    if (this.#closed) return chain(this.#refusals, channelKey, refused);
    let settle: (result: Promise<T>) => void = () => {};
    const result = new Promise<T>((resolve) => {
      settle = resolve;
    });
    const waiting: Waiting = { refuse: () => settle(chain(this.#refusals, channelKey, refused)) };
    this.#waiting.add(waiting);
    void chain(this.#tails, channelKey, (): Promise<unknown> => {
      // Refused while it waited: its place in the queue passes at once.
      if (!this.#waiting.delete(waiting)) return Promise.resolve();
      const running = new Promise<T>((resolve) => resolve(task()));
      settle(running);
      return running;
    });
    return result;
  }

  /** Conversations with a turn queued or running. */
  get busy(): number {
    return this.#tails.size;
  }

  /**
   * No task starts from now on: the ones waiting are refused now, later ones as they come. Turns
   * already running go on (the caller ends them). Returns how many waiting tasks were refused.
   */
  close(): number {
    this.#closed = true;
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const task of waiting) task.refuse();
    return waiting.length;
  }

  /**
   * Resolves when every queued turn (and refusal) has finished, or after `timeoutMs`, whichever
   * comes first.
   */
  async drain(timeoutMs: number): Promise<'drained' | 'timed_out'> {
    const deadline = Date.now() + timeoutMs;
    while (this.#tails.size > 0 || this.#refusals.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return 'timed_out';
      await settleWithin(Promise.all([...this.#tails.values(), ...this.#refusals.values()]), left);
    }
    return 'drained';
  }
}

/** Runs `work` after the channel's previous work in `tails` settles; the channel leaves `tails` once idle. */
function chain<T>(
  tails: Map<string, Promise<unknown>>,
  channelKey: string,
  work: () => Promise<T>,
): Promise<T> {
  const previous = tails.get(channelKey) ?? Promise.resolve();
  const next = previous.then(work, work);
  const tail = next.catch(() => {});
  tails.set(channelKey, tail);
  void tail.then(() => {
    if (tails.get(channelKey) === tail) tails.delete(channelKey);
  });
  return next;
}
