/**
 * The stop of a process (`ebb start`, `ebb worker`): each part adds the steps that close what it
 * opened, and they run in reverse order, at shutdown or when a later part of the start fails. Each
 * step gets a bounded time, so a dead Redis or Postgres, or one behind a partition, cannot hold the
 * process at exit.
 */

import { settleWithin } from './deadline.js';
import type { Logger } from './logger.js';

/** How long a shutdown step may take unless it says otherwise. */
export const SHUTDOWN_STEP_MS = 3_000;

export class ShutdownSteps {
  readonly #steps: { readonly close: () => Promise<unknown>; readonly ms: number }[] = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Closes what was just opened, before what was opened earlier; `ms` bounds its wait. */
  add(close: () => Promise<unknown>, ms = SHUTDOWN_STEP_MS): void {
    this.#steps.push({ close, ms });
  }

  /** Runs each step once: a second close (a signal after a failed start, say) finds none left. */
  async close(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse()) {
      const closing = step
        .close()
        .catch((err: unknown) =>
          this.#logger.warn({ event: 'shutdown.step_failed', err }, 'shutdown step failed'),
        );
      if (!(await settleWithin(closing, step.ms)).done)
        this.#logger.warn({ event: 'shutdown.step_timed_out' }, 'a shutdown step took too long; moving on');
    }
  }
}
