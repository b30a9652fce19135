/**
 * One actor per conversation: turns of a channel run one at a time, in arrival order; channels run
 * in parallel, so a busy channel never delays another. An actor is forgotten once its queue drains.
 */
import { settleWithin } from '@ebb/core';

export class ChannelActors {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(channelKey: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(channelKey) ?? Promise.resolve();
    const next = previous.then(task, task);
    const tail = next.catch(() => {});
    this.#tails.set(channelKey, tail);
    void tail.then(() => {
      if (this.#tails.get(channelKey) === tail) this.#tails.delete(channelKey);
    });
    return next;
  }

  /** Conversations with a turn queued or running. */
  get busy(): number {
    return this.#tails.size;
  }

  /** Resolves when every queued turn has finished, or after `timeoutMs`, whichever comes first. */
  async drain(timeoutMs: number): Promise<'drained' | 'timed_out'> {
    const deadline = Date.now() + timeoutMs;
    while (this.#tails.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return 'timed_out';
      await settleWithin(Promise.all(this.#tails.values()), left);
    }
    return 'drained';
  }
}
