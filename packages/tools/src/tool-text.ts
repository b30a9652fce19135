/**
 * How long a tool's text may be where it goes. A tool may answer with megabytes, or with characters
 * a reader cannot see; its outcome goes on to the archive, the model and the tokenizer (on the
 * event loop), so `runToolCall` passes every outcome through `boundedToolText`. Log lines get less
 * still (`loggedToolText`): a debug line is for seeing what happened, not for keeping the result.
 * An MCP tool's description goes to every prompt that offers the tool (`toolDescription`).
 *
 * Pure: no I/O.
 */
import { ARCHIVE_SEARCH, plainText } from '@ebb/core';

/**
 * The longest tool outcome text, note included: the archive search's indexed prefix, so all of a
 * result that is kept can be found by `search_history`. A longer result keeps its start and ends
 * with a note that says how much was left out; a tool with more to say can be asked for less.
 */
export const MAX_TOOL_RESULT_CHARS = ARCHIVE_SEARCH.indexedChars;

/** The longest MCP tool description the model is offered; a longer one is cut, ending in `…`. */
export const MAX_TOOL_DESCRIPTION_CHARS = 1_024;

/** The longest tool argument or result text a log line carries. */
export const MAX_LOGGED_TOOL_CHARS = 2_000;

/**
 * `text` as the model and the archive get it: line breaks normalized and control, bidi, zero-width
 * and tag characters removed (core's `plainText`), and at most `MAX_TOOL_RESULT_CHARS` long, a cut
 * one ending in a note with the count left out and the total. Only the kept start is scanned, so a
 * 50 MB result costs a slice, not a pass over 50 MB.
 */
export function boundedToolText(text: string): string {
  if (text.length <= MAX_TOOL_RESULT_CHARS) return plainText(text);
  return plainText(cut(text, MAX_TOOL_RESULT_CHARS, 'the result was too long'));
}

/**
 * An MCP tool's description as the model reads it: plain (`plainText`), at most
 * `MAX_TOOL_DESCRIPTION_CHARS`, a cut one ending in `…`. Only its start is scanned.
 */
export function toolDescription(text: string): string {
  const scanned = text.slice(0, 4 * MAX_TOOL_DESCRIPTION_CHARS);
  const plain = plainText(scanned);
  if (plain.length <= MAX_TOOL_DESCRIPTION_CHARS && scanned.length === text.length) return plain;
  let kept = Math.min(plain.length, MAX_TOOL_DESCRIPTION_CHARS - 1);
  if (isHighSurrogate(plain.charCodeAt(kept - 1))) kept -= 1;
  return `${plain.slice(0, kept)}…`;
}

/** `text` for a log line: at most `MAX_LOGGED_TOOL_CHARS`, a cut one saying how much was left out. */
export function loggedToolText(text: string): string {
  return text.length <= MAX_LOGGED_TOOL_CHARS ? text : cut(text, MAX_LOGGED_TOOL_CHARS, 'cut for the log');
}

/** The start of `text` and a note, `maxChars` at most in all; never half a surrogate pair. */
function cut(text: string, maxChars: number, why: string): string {
  const note = (left: number) => `\n\n[${count(left)} of ${count(text.length)} characters left out: ${why}]`;
  // The note is never longer than it is with the whole text left out.
  let kept = maxChars - note(text.length).length;
  if (isHighSurrogate(text.charCodeAt(kept - 1))) kept -= 1;
  return `${text.slice(0, kept)}${note(text.length - kept)}`;
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
