/**
 * Text from a channel made safe to quote in a prompt. Whatever participants can steer (message
 * authors, the summaries and memories a model wrote from their messages, a `/compact` focus) reaches
 * a model as data inside delimiters Ebb chose. These helpers make sure such text cannot close or
 * forge those delimiters, whatever it holds:
 *
 * - every line break a model may honour (CR, LF, VT, FF, NEL, LS, PS) is one `\n`, or a space in
 *   one-line text, so a line cannot pass for a new header;
 * - control characters and invisible format characters (bidi overrides and isolates, zero-width
 *   spaces, BOM, Unicode tag characters that smuggle hidden ASCII) are removed; the zero-width
 *   joiner and non-joiner stay, as scripts and emoji need them;
 * - `<` and `>`, and the brackets a model may read as them (fullwidth `＜`, `〈`, `⟨`, `‹`, `˂`, …),
 *   become `&lt;` and `&gt;`, so no `<tag>` can appear inside quoted text.
 *
 * Pure: no I/O.
 */

const LINE_BREAK = /\r\n?|[\n\v\f\u0085\u2028\u2029]/g;
/**
 * Controls (`Cc`) other than tab and line feed (line breaks are handled before), format characters
 * (`Cf`: invisible, and some reorder what follows) other than ZWNJ and ZWJ, and the whole tag block
 * (U+E0000–U+E007F, unassigned code points included).
 */
const HIDDEN = /(?![\t\n\u200C\u200D])[\p{Cc}\p{Cf}\u{E0000}-\u{E007F}]/gu;
const OPENING_BRACKET = /[<\u02C2\u1438\u2039\u2329\u276C\u276E\u27E8\u3008\uFE64\uFF1C]/g;
const CLOSING_BRACKET = /[>\u02C3\u1433\u203A\u232A\u276D\u276F\u27E9\u3009\uFE65\uFF1E]/g;

/** How long an author or speaker label may be, in characters. */
export const MAX_LABEL_CHARS = 80;

/**
 * Text shown inside a fence whose delimiter was chosen to outrun it (the summarizer's transcript):
 * every line break a model may honour is one `\n` and hidden characters are gone, but brackets stay,
 * so pasted code reads as written.
 */
export function plainText(text: string): string {
  return visible(text.replace(LINE_BREAK, '\n'));
}

/** Multi-line text to quote inside a delimited block: lines kept, nothing that can close the block. */
export function quotedText(text: string): string {
  return escapeBrackets(plainText(text));
}

/**
 * One-line text to quote: all whitespace (line breaks included) collapsed to single spaces, and at
 * most `maxChars` characters of it (cut with `…`), before the brackets are escaped.
 */
export function quotedLine(text: string, maxChars = Number.POSITIVE_INFINITY): string {
  const line = visible(text.replace(LINE_BREAK, ' ')).replace(/\s+/g, ' ').trim();
  return escapeBrackets(clip(line, maxChars));
}

/** An author or speaker as a prompt names it: one line of at most `MAX_LABEL_CHARS`, or `fallback`. */
export function quotedLabel(text: string, fallback = 'unknown'): string {
  return quotedLine(text, MAX_LABEL_CHARS) || fallback;
}

function visible(text: string): string {
  return text.replace(HIDDEN, '');
}

function escapeBrackets(text: string): string {
  return text.replace(OPENING_BRACKET, '&lt;').replace(CLOSING_BRACKET, '&gt;');
}

function clip(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  // By code points, so a surrogate pair is never cut in half.
  const chars = Array.from(text);
  if (chars.length <= maxChars) return text;
  return `${chars
    .slice(0, Math.max(0, maxChars - 1))
    .join('')
    .trimEnd()}…`;
}
