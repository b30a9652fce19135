/**
 * How `ebb dev`, `ebb start` and `ebb worker` meet SIGTERM and SIGINT. The first starts the graceful
 * stop. The listeners then stay for the life of the process, so a repeated signal never meets Node's
 * default action, which kills at once, before the shutdown has run: Ctrl-C on `npm start` is two
 * signals (the terminal signals the whole foreground process group, and npm forwards its own copy).
 * The second is logged and ignored; the third exits at once with status 1, for an operator who will
 * not wait for the grace period (under npm, that is the second Ctrl-C). Once the stop is done the
 * process exits by itself; `exitIfLingering` makes sure it does.
 */
import type { Logger } from '@ebb/logger';

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** Resolves with the first SIGTERM or SIGINT; handles every later one as above. */
export function untilStopSignal(logger: Logger): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      received += 1;
      if (received === 1) {
        resolve(signal);
      } else if (received === 2) {
        logger.warn(
          { event: 'shutdown.signal_ignored', signal },
          'already stopping; a third SIGINT or SIGTERM stops at once, without waiting for the work in hand',
        );
      } else {
        logger.warn({ event: 'shutdown.forced', signal }, 'stopping at once');
        process.exit(1);
      }
    };
    for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  });
}

/** How long a stopped process may take to exit by itself (BullMQ's last blocking-read watchdog is 6 s). */
export const LINGER_MS = 10_000;

/**
 * Called once the stop is done (or a failed start has closed what it opened): every part is closed,
 * and the process should exit by itself as the last timers run out. Should a library keep a
 * connection or a timer going after its close (BullMQ and ioredis have, with Redis away), the process
 * would never exit and a supervisor would wait its whole grace period to kill it. So past `ms` it is
 * logged, with what is still open, and the process exits with `code`. Its timer, returned, is
 * unref'd: it never holds the process itself.
 */
export function exitIfLingering(
  logger: Logger,
  code: number,
  options: { readonly ms?: number; readonly exit?: (code: number) => void } = {},
): NodeJS.Timeout {
  const exit = options.exit ?? ((c: number) => process.exit(c));
  return setTimeout(() => {
    logger.warn(
      { event: 'shutdown.lingering', resources: process.getActiveResourcesInfo() },
      'stopped, but something was still open; exiting anyway',
    );
    exit(code);
  }, options.ms ?? LINGER_MS).unref();
}
