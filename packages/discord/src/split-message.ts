/**
 * Splits a reply into Discord messages of at most `limit` characters (UTF-16 units, which never
 * undercount Discord's own count). Cuts at the last line break in the second half of the window, else
 * at the last space there, else hard (never inside a surrogate pair); the break or space cut at is
 * dropped. A code block left open at a cut is closed with ``` and reopened, with its language, at the
 * start of the next message, so each message renders on its own.
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
    const cut = cutPoint(rest, limit - prefix.length - FENCE_CLOSE.length);
    const piece = rest.slice(0, cut.end);
    rest = rest.slice(cut.next);
    const open = openFenceAfter(piece, fence);
    chunks.push(open === undefined ? prefix + piece : prefix + piece + FENCE_CLOSE);
    // A long opener (```some-very-long-info-string) is reopened bare so it cannot eat the budget.
    fence = open === undefined ? undefined : open.length > limit / 4 ? FENCE : open;
  }
  return chunks.filter((chunk) => chunk.trim() !== '');
}

function cutPoint(text: string, budget: number): { end: number; next: number } {
  const window = text.slice(0, budget + 1);
  const half = Math.floor(budget / 2);
  const newline = window.lastIndexOf('\n');
  if (newline >= half) return { end: newline, next: newline + 1 };
  const space = window.lastIndexOf(' ');
  if (space >= half) return { end: space, next: space + 1 };
  const code = text.charCodeAt(budget - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? budget - 1 : budget;
  return { end, next: end };
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
