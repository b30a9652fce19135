/** Calls `fn` now; a synchronous throw becomes a rejection, so a handler bug cannot reach discord.js. */
export function settle<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}
