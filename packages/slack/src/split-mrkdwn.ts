/**
 * Splits a converted reply (mrkdwn, escaped, fences bare on their own lines, as `markdownToMrkdwn`
 * writes them) into Slack messages of at most `limit` characters (UTF-16 units, which never undercount
 * Slack's own count). In the second half of each window it cuts, by preference:
 *
 * 1. at a paragraph boundary (a blank line) outside a code block;
 * 2. at a line break outside a code block (between list items, after a code block);
 * 3. at a line break inside a code block: the block is closed at the cut and reopened at the start of
 *    the next message, so each message renders on its own;
 * 4. at a space, never inside `<…>` (a link or a mention) or an entity (`&amp;`);
 * 5. hard, but still not inside `<…>`, an entity or a surrogate pair.
 *
 * Why 3,900: `chat.postMessage` truncates `text` past 40,000 characters, but Slack recommends keeping
 * a message under 4,000, and longer ones render as a wall behind "Show more" and are cut short in
 * notifications. The count is taken on the escaped text Slack receives (`&amp;` counts 5), so it can
 * only overcount; 3,900 leaves room under the recommendation for that and for nothing else.
 */

export const SLACK_MESSAGE_LIMIT = 3_900;

const FENCE = '```';
const FENCE_CLOSE = `\n${FENCE}`;
const FENCE_OPEN = `${FENCE}\n`;
const MIN_LIMIT = 40;
/** Spans a cut must not fall inside: Slack markup (`<url|label>`, `<@U123>`), entities, backtick runs. */
const UNBREAKABLE = /<[^<>\n]*>|&(?:amp|lt|gt);|`{2,}/g;

interface Cut {
  /** Where the piece ends (exclusive). */
  readonly end: number;
  /** Where the rest starts. */
  readonly next: number;
  /** Whether a code block is open at `end`. */
  readonly inCode: boolean;
}

/** The messages to post, in order; none for text that is empty or only whitespace. */
export function splitMrkdwn(text: string, limit: number = SLACK_MESSAGE_LIMIT): string[] {
  if (!Number.isInteger(limit) || limit < MIN_LIMIT) {
    throw new RangeError(`limit must be an integer of at least ${MIN_LIMIT}, got ${limit}`);
  }
  if (text.trim() === '') return [];
  if (text.length <= limit) return [text];

  const chunks: string[] = [];
  let rest = text;
  let inCode = false;
  while (rest.length > 0) {
    const prefix = inCode ? FENCE_OPEN : '';
    if (prefix.length + rest.length <= limit) {
      chunks.push(prefix + rest);
      break;
    }
    const cut = cutPoint(rest, limit - prefix.length - FENCE_CLOSE.length, inCode);
    const piece = rest.slice(0, cut.end);
    chunks.push(prefix + piece + (cut.inCode ? FENCE_CLOSE : ''));
    rest = rest.slice(cut.next);
    inCode = cut.inCode;
    // The block's own closing fence comes next: the close just added stands for it.
    if (inCode && /^```[ \t]*(?:\n|$)/.test(rest)) {
      rest = rest.slice(rest.indexOf('\n') === -1 ? rest.length : rest.indexOf('\n') + 1);
      inCode = false;
    }
  }
  return chunks.filter((chunk) => chunk.trim() !== '');
}

function cutPoint(text: string, budget: number, openAtStart: boolean): Cut {
  const half = Math.floor(budget / 2);
  const breaks = lineBreaks(text, budget, openAtStart);
  const last = (accept: (b: LineBreak) => boolean): LineBreak | undefined =>
    breaks.findLast((b) => b.at >= half && accept(b));

  const paragraph = last((b) => !b.inCode && text[b.at + 1] === '\n');
  if (paragraph) return { end: paragraph.at, next: paragraph.at + 2, inCode: false };
  const line = last((b) => !b.inCode) ?? last((b) => !b.afterOpeningFence);
  if (line) return { end: line.at, next: line.at + 1, inCode: line.inCode };

  const inCodeAt = (index: number): boolean => {
    const before = breaks.findLast((b) => b.at < index);
    return before ? before.inCode : openAtStart;
  };
  const unbreakable = [...text.matchAll(UNBREAKABLE)].map((m) => [m.index, m.index + m[0].length] as const);
  const breakable = (index: number): boolean => !unbreakable.some(([from, to]) => from < index && index < to);

  const window = text.slice(0, budget + 1);
  for (let space = window.lastIndexOf(' '); space >= half; space = window.lastIndexOf(' ', space - 1)) {
    if (breakable(space)) return { end: space, next: space + 1, inCode: inCodeAt(space) };
  }
  // A fence line is never cut in two (half a fence is text): cut before it, even if that leaves an
  // empty block.
  const fenceLine = text.lastIndexOf('\n', budget - 1) + 1;
  if (fenceLine > 0 && text.slice(fenceLine).trimStart().startsWith(FENCE)) {
    return { end: fenceLine - 1, next: fenceLine, inCode: inCodeAt(fenceLine) };
  }
  const inside = unbreakable.find(([from, to]) => from < budget && budget < to);
  const end = notInPair(text, inside && inside[0] > 1 ? inside[0] : budget);
  return { end, next: end, inCode: inCodeAt(end) };
}

/** `end`, or one less when that would cut a surrogate pair in two. */
function notInPair(text: string, end: number): number {
  const code = text.charCodeAt(end - 1);
  return code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

interface LineBreak {
  /** Index of the `\n`. */
  readonly at: number;
  /** Whether a code block is open after the line this break ends. */
  readonly inCode: boolean;
  /** The line it ends is the fence that opened that block (a cut there leaves an empty block). */
  readonly afterOpeningFence: boolean;
}

/** The line breaks within the first `budget + 1` characters, with the code state at each. */
function lineBreaks(text: string, budget: number, openAtStart: boolean): LineBreak[] {
  const breaks: LineBreak[] = [];
  let inCode = openAtStart;
  let start = 0;
  for (let at = text.indexOf('\n'); at !== -1 && at <= budget; at = text.indexOf('\n', start)) {
    const isFence = text.slice(start, at).trim() === FENCE;
    if (isFence) inCode = !inCode;
    breaks.push({ at, inCode, afterOpeningFence: isFence && inCode });
    start = at + 1;
  }
  return breaks;
}
