/**
 * Splits a reply into chat messages of at most `limit` characters (UTF-16 units, which never undercount
 * Slack's or Discord's own count). Slack and Discord cut by the same rules; each passes only its limit,
 * its markup and its kind of fence. In the second half of each window it cuts, by preference:
 *
 * 1. at a paragraph boundary (a blank line) outside a code block;
 * 2. at a line break outside a code block (between list items, after a code block);
 * 3. at a line break inside a code block, but not right after its opening fence: the block is closed at
 *    the cut and reopened at the start of the next message, so each message renders on its own;
 * 4. at a space, never inside a backtick run or the platform's markup (`unbreakable`);
 * 5. before a fence line the window ends in (half a fence is text), even if that leaves an empty block;
 * 6. hard, but still not inside a backtick run, the platform's markup or a surrogate pair.
 *
 * The break or space cut at is dropped.
 */

export interface SplitReplyOptions {
  /** The most UTF-16 units a message may hold; an integer of at least 20. */
  readonly limit: number;
  /**
   * The platform's spans a space or hard cut must not fall inside (links, mentions, entities), besides
   * backtick runs. Only its source is used.
   */
  readonly unbreakable: RegExp;
  /**
   * `'with-info'`: Markdown, where an opening fence may carry an info string (```ts) and a block cut in
   * two is reopened with it. `'bare'`: Slack's mrkdwn, whose fences are bare, so a line such as ```ts
   * is text there.
   */
  readonly fences: ReplyFences;
}

export type ReplyFences = 'bare' | 'with-info';

const FENCE = '```';
const FENCE_CLOSE = `\n${FENCE}`;
const MIN_LIMIT = 20;
/** A fence line at the start of the rest: the block's own closing fence, when one was just closed. */
const CLOSING_FENCE = /^```[ \t]*(?:\n|$)/;

interface Rules {
  readonly isFence: (line: string) => boolean;
  readonly unbreakable: RegExp;
}

interface Cut {
  /** Where the piece ends (exclusive). */
  readonly end: number;
  /** Where the rest starts. */
  readonly next: number;
  /** The opening line of the code block still open at `end`, if any. */
  readonly open: string | undefined;
}

/** The messages to post, in order; none for text that is empty or only whitespace. */
export function splitReply(text: string, options: SplitReplyOptions): string[] {
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < MIN_LIMIT) {
    throw new RangeError(`limit must be an integer of at least ${MIN_LIMIT}, got ${limit}`);
  }
  if (text.trim() === '') return [];
  if (text.length <= limit) return [text];

  const rules: Rules = {
    isFence: fenceTest(options.fences),
    unbreakable: new RegExp(`(?:${options.unbreakable.source})|\`{2,}`, 'g'),
  };
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
    const cut = cutPoint(rest, limit - prefix.length - FENCE_CLOSE.length, fence, rules);
    chunks.push(prefix + rest.slice(0, cut.end) + (cut.open === undefined ? '' : FENCE_CLOSE));
    rest = rest.slice(cut.next);
    // A long opener (```some-very-long-info-string) is reopened bare so it cannot eat the budget.
    fence = cut.open === undefined ? undefined : cut.open.length > limit / 4 ? FENCE : cut.open;
    // The block's own closing fence comes next: the close just added stands for it.
    if (fence !== undefined && CLOSING_FENCE.test(rest)) {
      const newline = rest.indexOf('\n');
      rest = newline === -1 ? '' : rest.slice(newline + 1);
      fence = undefined;
    }
  }
  return chunks.filter((chunk) => chunk.trim() !== '');
}

function fenceTest(fences: ReplyFences): (line: string) => boolean {
  switch (fences) {
    case 'bare':
      return (line) => line.trim() === FENCE;
    case 'with-info':
      return (line) => line.trim().startsWith(FENCE);
  }
}

function cutPoint(text: string, budget: number, openAtStart: string | undefined, rules: Rules): Cut {
  const half = Math.floor(budget / 2);
  const breaks = lineBreaks(text, budget, openAtStart, rules.isFence);
  const cut = (end: number, next: number): Cut => {
    const before = breaks.findLast((b) => b.at < end);
    const line = before ? { start: before.at + 1, open: before.open } : { start: 0, open: openAtStart };
    return { end, next, open: openAt(text, end, line, rules.isFence) };
  };
  const last = (accept: (b: LineBreak) => boolean): LineBreak | undefined =>
    breaks.findLast((b) => b.at >= half && accept(b));

  const paragraph = last((b) => b.open === undefined && text[b.at + 1] === '\n');
  if (paragraph) return cut(paragraph.at, paragraph.at + 2);
  const line = last((b) => b.open === undefined) ?? last((b) => !b.afterOpeningFence);
  if (line) return cut(line.at, line.at + 1);

  const spans = [...text.matchAll(rules.unbreakable)].map((m) => [m.index, m.index + m[0].length] as const);
  const breakable = (index: number): boolean => !spans.some(([from, to]) => from < index && index < to);
  const window = text.slice(0, budget + 1);
  for (let space = window.lastIndexOf(' '); space >= half; space = window.lastIndexOf(' ', space - 1)) {
    if (breakable(space)) return cut(space, space + 1);
  }
  const fenceLine = text.lastIndexOf('\n', budget - 1) + 1;
  if (fenceLine > 0 && text.slice(fenceLine).trimStart().startsWith(FENCE))
    return cut(fenceLine - 1, fenceLine);
  const inside = spans.find(([from, to]) => from < budget && budget < to);
  const end = notInPair(text, inside && inside[0] > 1 ? inside[0] : budget);
  return cut(end, end);
}

/** `end`, or one less when that would cut a surrogate pair in two. */
function notInPair(text: string, end: number): number {
  const code = text.charCodeAt(end - 1);
  return code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

interface LineBreak {
  /** Index of the `\n`. */
  readonly at: number;
  /** The opening line of the code block open after the line this break ends, if any. */
  readonly open: string | undefined;
  /** The line it ends opened that block (a cut there would leave an empty block). */
  readonly afterOpeningFence: boolean;
}

/** The line breaks within the first `budget + 1` characters, with the code block open at each. */
function lineBreaks(
  text: string,
  budget: number,
  openAtStart: string | undefined,
  isFence: (line: string) => boolean,
): LineBreak[] {
  const breaks: LineBreak[] = [];
  let open = openAtStart;
  let start = 0;
  for (let at = text.indexOf('\n'); at !== -1 && at <= budget; at = text.indexOf('\n', start)) {
    const line = text.slice(start, at);
    const fence = isFence(line);
    if (fence) open = toggle(open, line);
    breaks.push({ at, open, afterOpeningFence: fence && open !== undefined });
    start = at + 1;
  }
  return breaks;
}

/** The line a cut falls in: where it starts, and the code block open at its start. */
interface CutLine {
  readonly start: number;
  readonly open: string | undefined;
}

/**
 * The code block open where a piece ending at `end` ends. The line the cut falls in counts as a fence
 * when both what the piece keeps of it and the whole line are one.
 */
function openAt(
  text: string,
  end: number,
  line: CutLine,
  isFence: (line: string) => boolean,
): string | undefined {
  const { start, open } = line;
  const lineEnd = text.indexOf('\n', start);
  const kept = text.slice(start, end);
  return isFence(kept) && isFence(text.slice(start, lineEnd === -1 ? undefined : lineEnd))
    ? toggle(open, kept)
    : open;
}

function toggle(open: string | undefined, fenceLine: string): string | undefined {
  return open === undefined ? fenceLine.trim() : undefined;
}
