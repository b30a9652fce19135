/**
 * Parsers for the delimiters Ebb puts around quoted data in its prompts, strict the way a model
 * reading the prompt would be lenient: every line break a model may honour splits lines, and a
 * delimiter that appears twice is a failure. Tests use them to show planted text stays inside.
 *
 * - `parseReferenceBlock`: a chat prompt's `<ebb-summary …>` / `<ebb-memories …>` message;
 * - `parseFencedBlocks`: the summarizer's user message, with its Markdown fences.
 */

/** Every line break a model may honour: CR, LF, VT, FF, NEL, LS, PS. */
export const ANY_LINE_BREAK = /\r\n?|[\n\v\f\u0085\u2028\u2029]/;

/** Characters a model may read as `<` or `>`. */
export const ANGLE_BRACKETS =
  /[<>\u02C2\u02C3\u1433\u1438\u2039\u203A\u2329\u232A\u276C-\u276F\u27E8\u27E9\u3008\u3009\uFE64\uFE65\uFF1C\uFF1E]/u;

/** Invisible characters that reorder or hide text: bidi controls, zero-width spaces, BOM, tag characters. */
export const HIDDEN_CHARACTERS =
  /[\u200B\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u{E0000}-\u{E007F}]/u;

export function modelLines(text: string): string[] {
  return text.split(ANY_LINE_BREAK);
}

export interface ReferenceBlock {
  /** What the open tag says after its name (`messages="#1–#10"`). */
  readonly attributes: string;
  /** Between the open tag's line and the close tag's line. */
  readonly payload: string;
  /** After the close tag. */
  readonly after: string;
}

/**
 * A message that is one reference block: `<tag attributes>\n…\n</tag>` then anything of ours. Throws
 * unless the tag opens once, at the start, and closes once, and the payload holds no angle bracket.
 */
export function parseReferenceBlock(content: string, tag: string): ReferenceBlock {
  const open = new RegExp(`^<${tag}( [^<>\\n]*)?>\\n`).exec(content);
  if (!open) throw new Error(`the message does not open with <${tag}>: ${preview(content)}`);
  const close = `\n</${tag}>`;
  const end = content.indexOf(close);
  if (end < 0) throw new Error(`<${tag}> is never closed`);
  const opens = content.toLowerCase().split(`<${tag}`).length - 1;
  const closes = content.toLowerCase().split(`</${tag}`).length - 1;
  if (opens !== 1 || closes !== 1)
    throw new Error(`<${tag}> opens ${opens} times and closes ${closes} times`);
  const payload = content.slice(open[0].length, end);
  if (ANGLE_BRACKETS.test(payload))
    throw new Error(`the <${tag}> payload holds an angle bracket: ${preview(payload)}`);
  return { attributes: (open[1] ?? '').trim(), payload, after: content.slice(end + close.length) };
}

export interface FencedBlock {
  /** The info string after the opening fence (`transcript`, `earlier-summary-1`). */
  readonly label: string;
  readonly lines: readonly string[];
}

/**
 * The backtick-fenced blocks of a Markdown text and the lines outside them. A block closes at the
 * first line of at most 3 spaces, then at least as many backticks as opened it, then spaces
 * (CommonMark). Throws on a fence that never closes.
 */
export function parseFencedBlocks(text: string): { blocks: FencedBlock[]; outside: string[] } {
  const blocks: FencedBlock[] = [];
  const outside: string[] = [];
  const lines = modelLines(text);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const open = /^ {0,3}(`{3,})([^`]*)$/.exec(line);
    if (!open) {
      outside.push(line);
      continue;
    }
    const length = open[1]?.length ?? 0;
    const closes = (l: string) => {
      const run = /^ {0,3}(`+)[ \t]*$/.exec(l);
      return run !== null && (run[1]?.length ?? 0) >= length;
    };
    const end = lines.findIndex((l, j) => j > i && closes(l));
    if (end < 0) throw new Error(`the fence opened at line ${i + 1} (${preview(line)}) never closes`);
    blocks.push({ label: (open[2] ?? '').trim(), lines: lines.slice(i + 1, end) });
    i = end;
  }
  return { blocks, outside };
}

function preview(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}
