/**
 * The channel actors: one turn at a time per channel, in arrival order; and, once closed, the tasks
 * that have not begun answered by their refusal, at once, in each channel's order.
 */
import { describe, expect, it } from 'vitest';
import { ChannelActors } from './channel-actors.js';

/** A task that runs until `finish` is called; `started` resolves when it begins. */
function held<T>(value: T) {
  let begin = () => {};
  let finish = () => {};
  const started = new Promise<void>((resolve) => (begin = resolve));
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    started,
    finish,
    task: async () => {
      begin();
      await done;
      return value;
    },
  };
}

describe('ChannelActors', () => {
  it("runs a channel's tasks one at a time, in arrival order, and other channels beside them", async () => {
    const actors = new ChannelActors();
    const order: string[] = [];
    const first = held('a1');
    const a1 = actors.run('a', first.task, async () => 'refused');
    const a2 = actors.run(
      'a',
      async () => {
        order.push('a2');
        return 'a2';
      },
      async () => 'refused',
    );
    const b1 = actors.run(
      'b',
      async () => {
        order.push('b1');
        return 'b1';
      },
      async () => 'refused',
    );
    await first.started;
    expect(await b1).toBe('b1');
    expect(order).toEqual(['b1']);
    first.finish();
    expect(await Promise.all([a1, a2])).toEqual(['a1', 'a2']);
    expect(order).toEqual(['b1', 'a2']);
    expect(await actors.drain(1_000)).toBe('drained');
  });

  it('refuses the tasks waiting when closed without waiting for the running one, in order, and starts none after', async () => {
    const actors = new ChannelActors();
    const running = held('ran');
    const refusals: string[] = [];
    const refuse = (name: string) => async () => {
      // The first refusal is slower than the next: its channel's order is kept anyway.
      if (name === 'a2') await new Promise<void>((resolve) => setImmediate(resolve));
      refusals.push(name);
      return `refused ${name}`;
    };
    const never = async () => {
      throw new Error('a task ran after the actors were closed');
    };
    const a1 = actors.run('a', running.task, refuse('a1'));
    const a2 = actors.run('a', never, refuse('a2'));
    const a3 = actors.run('a', never, refuse('a3'));
    await running.started;

    expect(actors.close()).toBe(2);
    // Answered while the turn ahead of them is still running.
    expect(await Promise.all([a2, a3])).toEqual(['refused a2', 'refused a3']);
    expect(refusals).toEqual(['a2', 'a3']);
    expect(await actors.run('b', never, refuse('b1'))).toBe('refused b1');
    expect(await actors.drain(0)).toBe('timed_out');

    running.finish();
    expect(await a1).toBe('ran');
    expect(await actors.drain(1_000)).toBe('drained');
  });
});
