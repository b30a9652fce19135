/** A promise that did not settle within its time. */
export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
  readonly code = 'timeout';

  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/**
 * `work` or a `TimeoutError` after `ms`, whichever comes first. The work itself is not cancelled
 * (a PING on a dead socket cannot be); its late result or error is ignored.
 */
export async function withTimeout<T>(work: () => Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(ms)), ms);
  });
  const running = Promise.resolve().then(work);
  // The loser of the race must not surface as an unhandled rejection.
  running.catch(() => {});
  try {
    return await Promise.race([running, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
