/** How a failed model call is reported, by the metrics (`metered-models.ts`) and the traces alike. */

/** An error's own `code` (an `LlmError`'s `llm_*`), `aborted` for an abort, else `error`. */
export function errorCode(err: unknown): string {
  if (err instanceof Error && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error && err.name === 'AbortError' ? 'aborted' : 'error';
}

/** The codes of every failed try an error says it ended (an `LlmError` after its retries). */
export function triesOf(err: unknown): readonly string[] | undefined {
  const tries = err instanceof Error && 'failedTries' in err ? err.failedTries : undefined;
  return Array.isArray(tries) && tries.every((t) => typeof t === 'string') ? tries : undefined;
}
