/**
 * The focus of a manual pass (`/compact the deploy plan`, `ebb compact KEY --focus TEXT`): what the
 * summary should dwell on. It is a participant's text: it travels in the job payload and reaches the
 * summarizer only as quoted data, and it is bounded so it cannot crowd out the transcript.
 */

/** The most characters (UTF-16 code units, as `String.length` counts) a focus may have. */
export const MAX_FOCUS_CHARS = 500;

/** The sentence to answer a focus past the limit with; undefined when the focus is fine. */
export function focusProblem(focus: string): string | undefined {
  if (focus.length <= MAX_FOCUS_CHARS) return undefined;
  return `A compaction focus may be at most ${MAX_FOCUS_CHARS} characters; this one has ${focus.length}. Shorten it and try again.`;
}
