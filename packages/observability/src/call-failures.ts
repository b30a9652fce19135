/**
 * How a failed model call is reported, by the metrics (`metered-models.ts`) and the traces alike:
 * its code (core's `errorCodeOf`) and the codes of the tries a retry hid.
 */

/** The codes of every failed try an error says it ended (an `LlmError` after its retries). */
export function triesOf(err: unknown): readonly string[] | undefined {
  const tries = err instanceof Error && 'failedTries' in err ? err.failedTries : undefined;
  return Array.isArray(tries) && tries.every((t) => typeof t === 'string') ? tries : undefined;
}
