import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Logger, SILENT_LOGGER } from './logger.js';
import { ShutdownSteps } from './shutdown-steps.js';

/** A logger that keeps the `event` of each warn line. */
function warnings(): { logger: Logger; events: unknown[] } {
  const events: unknown[] = [];
  const logger: Logger = {
    ...SILENT_LOGGER,
    warn: (fields: object | string) => {
      events.push(typeof fields === 'object' ? (fields as { event?: unknown }).event : fields);
    },
    child: () => logger,
  };
  return { logger, events };
}

describe('ShutdownSteps', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('closes the last opened first, each once, however many times it is closed', async () => {
    const steps = new ShutdownSteps(SILENT_LOGGER);
    const closed: string[] = [];
    for (const name of ['database', 'redis', 'worker'])
      steps.add(async () => {
        closed.push(name);
      });
    await steps.close();
    await steps.close();
    expect(closed).toEqual(['worker', 'redis', 'database']);
  });

  it('moves on past a step that fails or never ends, and says so', async () => {
    const { logger, events } = warnings();
    const steps = new ShutdownSteps(logger);
    const closed: string[] = [];
    steps.add(async () => {
      closed.push('database');
    });
    steps.add(() => new Promise(() => {}), 500);
    steps.add(() => Promise.reject(new Error('redis gone')));
    const closing = steps.close();
    await vi.advanceTimersByTimeAsync(499);
    expect(closed).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await closing;
    expect(closed).toEqual(['database']);
    expect(events).toEqual(['shutdown.step_failed', 'shutdown.step_timed_out']);
  });
});
