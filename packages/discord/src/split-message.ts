/**
 * Splits a reply into Discord messages of at most `limit` characters (UTF-16 units, which never
 * undercount Discord's own count). In the second half of each window it cuts, by preference: at a
 * paragraph boundary (a blank line) outside a code block; at a line break outside one (between list
 * items, after a block); at a line break inside one; at a space not inside a link (`[label](url)`) or
 * mention (`<@123>`); else hard, never inside a surrogate pair. The break or space cut at is dropped.
 * A code block left open at a cut is closed with ``` and reopened, with its language, at the start
 * of the next message, so each message renders on its own.
 */

export const DISCORD_MESSAGE_LIMIT = 2000;

const FENCE = '```';
const FENCE_CLOSE = `\n${FENCE}`;
const MIN_LIMIT = 20;

/** The messages to post, in order; none for text that is empty or only whitespace. */
export function splitMessage(text: string, limit: number = DISCORD_MESSAGE_LIMIT): string[] {
  if (!Number.isInteger(limit) || limit < MIN_LIMIT) {
    throw new RangeError(`limit must be an integer of at least ${MIN_LIMIT}, got ${limit}`);
  }
  if (text.trim() === '') return [];
  if (text.length <= limit) return [text];

  const chunks: string[] = [];
  let rest = text;
  // The opening line (```ts) of a code block the previous message closed early.
  let fence: string | undefined;
  while (rest.length > 0) {
    const prefix = fence === undefined ? '' : `${fence}\n`;
    if (prefix.length + rest.length <= limit) {
      chunks.push(prefix + rest);
      break;
    }
    const cut = cutPoint(rest, limit - prefix.length - FENCE_CLOSE.length, fence !== undefined);
    const piece = rest.slice(0, cut.end);
    rest = rest.slice(cut.next);
    const open = openFenceAfter(piece, fence);
    chunks.push(open === undefined ? prefix + piece : prefix + piece + FENCE_CLOSE);
    // A long opener (```some-very-long-info-string) is reopened bare so it cannot eat the budget.
    fence = open === undefined ? undefined : open.length > limit / 4 ? FENCE : open;
    // The block's own closing fence comes next: the close just added stands for it.
    if (fence !== undefined && /^```[ \t]*(?:\n|$)/.test(rest)) {
      const newline = rest.indexOf('\n');
      rest = newline === -1 ? '' : rest.slice(newline + 1);
      fence = undefined;
    }
  }
  return chunks.filter((chunk) => chunk.trim() !== '');
}

/** Spans a space or hard cut must not fall inside: `<@123>`, `<#1>`, `<:emoji:1>`, `[label](url)`, backtick runs. */
const UNBREAKABLE = /<[^<>\n]*>|\[[^\]\n]*\]\([^)\s]*\)|`{2,}/g;

function cutPoint(text: string, budget: number, openAtStart: boolean): { end: number; next: number } {
  const half = Math.floor(budget / 2);
  const breaks = lineBreaks(text, budget, openAtStart);
  const last = (accept: (b: LineBreak) => boolean): LineBreak | undefined =>
    breaks.findLast((b) => b.at >= half && accept(b));
  const paragraph = last((b) => !b.inCode && text[b.at + 1] === '\n');
  if (paragraph) return { end: paragraph.at, next: paragraph.at + 2 };
  const line = last((b) => !b.inCode) ?? last((b) => !b.afterOpeningFence);
  if (line) return { end: line.at, next: line.at + 1 };

  const unbreakable = [...text.matchAll(UNBREAKABLE)].map((m) => [m.index, m.index + m[0].length] as const);
  const breakable = (index: number): boolean => !unbreakable.some(([from, to]) => from < index && index < to);
  const window = text.slice(0, budget + 1);
  for (let space = window.lastIndexOf(' '); space >= half; space = window.lastIndexOf(' ', space - 1)) {
    if (breakable(space)) return { end: space, next: space + 1 };
  }
  // A fence line is never cut in two (half a fence is text): cut before it, even if that leaves an
  // empty block.
  const fenceLine = text.lastIndexOf('\n', budget - 1) + 1;
  if (fenceLine > 0 && text.slice(fenceLine).trimStart().startsWith(FENCE)) {
    return { end: fenceLine - 1, next: fenceLine };
  }
  const inside = unbreakable.find(([from, to]) => from < budget && budget < to);
  let end = inside && inside[0] > 1 ? inside[0] : budget;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return { end, next: end };
}

interface LineBreak {
  /** Index of the `\n`. */
  readonly at: number;
  /** Whether a code block is open after the line this break ends. */
  readonly inCode: boolean;
  /** The line it ends opened that block (a cut there would leave an empty block). */
  readonly afterOpeningFence: boolean;
}

/** The line breaks within the first `budget + 1` characters, with the code state at each. */
function lineBreaks(text: string, budget: number, openAtStart: boolean): LineBreak[] {
  const breaks: LineBreak[] = [];
  let inCode = openAtStart;
  let start = 0;
  for (let at = text.indexOf('\n'); at !== -1 && at <= budget; at = text.indexOf('\n', start)) {
    const isFence = text.slice(start, at).trim().startsWith(FENCE);
    if (isFence) inCode = !inCode;
    breaks.push({ at, inCode, afterOpeningFence: isFence && inCode });
    start = at + 1;
  }
  return breaks;
}

/** The opening line of the code block still open at the end of `piece`, if any. */
function openFenceAfter(piece: string, openAtStart: string | undefined): string | undefined {
  let open = openAtStart;
  for (const line of piece.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed.startsWith(FENCE)) continue;
    open = open === undefined ? trimmed : undefined;
  }
  return open;
}
