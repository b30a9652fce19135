/**
 * How `ebb dev`, `ebb start` and `ebb worker` meet SIGTERM and SIGINT. The first starts the graceful
 * stop. The listeners then stay for the life of the process, so a repeated signal never meets Node's
 * default action, which kills at once, before the shutdown has run: Ctrl-C on `npm start` is two
 * signals (the terminal signals the whole foreground process group, and npm forwards its own copy).
 * The second is logged and ignored; the third exits at once with status 1, for an operator who will
 * not wait for the grace period (under npm, that is the second Ctrl-C).
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
