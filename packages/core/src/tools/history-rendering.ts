/**
 * What search_history and read_history write: one block per message (`#1234 alice (…): …`, every
 * further line indented by two spaces so no archived line can pass for a header), spent against a
 * token budget counted with the channel's tokenizer. A search match too large for its share is
 * clipped with a marker; a message too large for a whole result is cut into numbered parts whose
 * sizes depend only on the message and the budget, so part n is the same text on every call.
 */

import type { StoredMessage } from '../model/model.js';
import type { Tokenizer } from '../model/tokens.js';
import type { ToolOutcome } from '../ports/tool-ports.js';
import { plainText, quotedLabel, quotedLine } from '../support/untrusted-text.js';
import { ARCHIVE_SEARCH } from './archive-search.js';

/** The knobs of a result's budget (part of `HISTORY_TOOLS`). */
export const HISTORY_RENDERING = {
  /**
   * The share of a result one search match may take: a giant tool output that happens to match
   * must not crowd out every other match (the model reads it whole with read_history).
   */
  searchMatchShare: 0.25,
} as const;

/** What a search asked for, as its result names it. */
export interface SearchedFor {
  readonly text: string;
  readonly fromSeq?: number;
  readonly toSeq?: number;
  readonly author?: string;
}

/** How large a result may be: `maxTokens` counted with the channel's tokenizer on the text as returned. */
export interface ResultBudget {
  readonly tokenizer: Tokenizer;
  readonly maxTokens: number;
}

/** Lines after a message's first start with this, so headers are only ever at the line start. */
const CONTINUATION = '  ';

/** A budget being spent: `take` adds a block when it fits. */
export class Budget {
  readonly #tokenizer: Tokenizer;
  #left: number;

  /** `available`: the result's tokens less those its first and last lines take. */
  constructor(tokenizer: Tokenizer, available: number) {
    this.#tokenizer = tokenizer;
    this.#left = available;
  }

  get left(): number {
    return this.#left;
  }

  /** Tokens of `block` as one line of a result. */
  cost(block: string): number {
    return this.#tokenizer.count(`${block}\n`);
  }

  take(block: string): boolean {
    const cost = this.cost(block);
    if (cost > this.#left) return false;
    this.#left -= cost;
    return true;
  }
}

export function renderSearch(
  args: SearchedFor,
  found: readonly StoredMessage[],
  loosened: boolean,
  resultBudget: ResultBudget,
): ToolOutcome {
  const { tokenizer, maxTokens } = resultBudget;
  const what = `"${quotedLine(args.text, 100)}"${filtersOf(args)}`;
  if (found.length === 0) {
    return {
      text:
        `No message in this channel's archive matches ${what}. Every word must appear; try fewer or ` +
        'other words, `a or b`, or drop the filters. Very common words (the, is, …) are ignored.',
      isError: false,
    };
  }
  const headOf = (shown: number) =>
    `${loosened ? 'No message has all the words of' : 'Best matches for'} ${what}` +
    `${loosened ? '; these have some of them' : ''}: ${shown} message${shown === 1 ? '' : 's'}, ` +
    'in seq order. Lines after a message’s first are indented.';
  const tailOf = (left: number) =>
    left > 0
      ? `\n[${left} more match${left === 1 ? '' : 'es'} did not fit; narrow the search with more words, author or from/to.]`
      : '';
  // The query and filters are quoted in the first line, so its length is measured, not assumed.
  const frame = tokenizer.count(headOf(found.length)) + tokenizer.count(tailOf(found.length)) + 2;
  const budget = new Budget(tokenizer, maxTokens - frame);
  const matchCap = Math.floor(budget.left * HISTORY_RENDERING.searchMatchShare);
  const shown: { seq: number; block: string }[] = [];
  // Best first: the best matches take the budget, then any smaller ones that still fit.
  for (const message of found) {
    const block = clippedBlock(message, tokenizer, matchCap, readWholeHint(message.seq));
    if (budget.take(block)) shown.push({ seq: message.seq, block });
  }
  const head = headOf(shown.length);
  const tail = tailOf(found.length - shown.length);
  // In seq order: the model reads them as the conversation went, and neighbours are one read away.
  const blocks = shown.sort((a, b) => a.seq - b.seq).map((s) => s.block);
  return { text: `${head}\n${blocks.join('\n')}${tail}`, isError: false };
}

function filtersOf(args: SearchedFor): string {
  const parts = [
    args.author === undefined ? '' : ` by ${quotedLabel(args.author)}`,
    args.fromSeq === undefined ? '' : ` from #${args.fromSeq}`,
    args.toSeq === undefined ? '' : ` to #${args.toSeq}`,
  ];
  return parts.join('');
}

/**
 * Part `part` of a message too large for one result, and what to read next; the whole message, when
 * it fits (`rangeEnd`: the range read_history was asked for goes on after it). Every result is
 * measured as it is returned, indentation and last line included.
 */
export function partOf(
  message: StoredMessage,
  part: number,
  resultBudget: ResultBudget,
  rangeEnd?: number,
): ToolOutcome {
  const { tokenizer, maxTokens } = resultBudget;
  const then =
    rangeEnd !== undefined && rangeEnd > message.seq ? { from: message.seq + 1, to: rangeEnd } : undefined;
  const whole = (after?: { from: number; to: number }) =>
    `Archived message #${message.seq}, whole.\n${messageBlock(message)}` +
    (after ? `\n[Continue with read_history from_seq ${after.from} to_seq ${after.to}.]` : '');
  // Judged with the longest last line any range can give it, so whether a message comes whole or in
  // parts (and how many) is the same from every call.
  const widest = { from: ARCHIVE_SEARCH.maxSeq, to: ARCHIVE_SEARCH.maxSeq };
  const fitsWhole = tokenizer.count(whole(widest)) <= maxTokens;
  if (part === 1 && fitsWhole) return { text: whole(then), isError: false };
  const { body, bounds } = fitsWhole
    ? { body: [], bounds: [0, 0] }
    : partBounds(message, tokenizer, maxTokens);
  const parts = bounds.length - 1;
  if (part > parts) {
    return {
      text: `Message #${message.seq} has ${parts} part${parts === 1 ? '' : 's'}; there is no part ${part}.`,
      isError: true,
    };
  }
  const text = tokenizer.decode(body.slice(bounds[part - 1], bounds[part]));
  return {
    text: `${headerOf(message)}${indent(text)}\n${partFooter(message.seq, part, parts, then)}`,
    isError: false,
  };
}

/**
 * Where the parts of a message too large for one result begin and end, as offsets into its body's
 * tokens: each part as returned (header, indented text and the longest last line a part of this
 * message can have) fits `maxTokens`. The bounds depend only on the message and the budget, so part
 * n is the same text on every call, whatever range the call came from.
 */
function partBounds(
  message: StoredMessage,
  tokenizer: Tokenizer,
  maxTokens: number,
): { body: number[]; bounds: number[] } {
  const header = headerOf(message);
  const body = tokenizer.encode(bodyOf(message));
  // Part numbers are at most the body's token count, and any range ends at the largest seq.
  const widest = { from: ARCHIVE_SEARCH.maxSeq, to: ARCHIVE_SEARCH.maxSeq };
  const footer = [
    partFooter(message.seq, body.length, body.length + 1, widest),
    partFooter(message.seq, body.length, body.length, widest),
  ].reduce((a, b) => (tokenizer.count(a) >= tokenizer.count(b) ? a : b));
  const render = (from: number, to: number) =>
    `${header}${indent(tokenizer.decode(body.slice(from, to)))}\n${footer}`;
  const bounds = [0];
  for (let start = 0; start < body.length; ) {
    const count = (n: number) => tokenizer.count(render(start, start + n));
    start += mostThatFits(count, maxTokens, Math.min(body.length - start, maxTokens), 1);
    bounds.push(start);
  }
  return { body, bounds };
}

/** A part's last line: where it is in the message, and what to read next. */
function partFooter(seq: number, part: number, parts: number, then?: { from: number; to: number }): string {
  const after = then ? `from_seq ${then.from} to_seq ${then.to}` : '';
  return part < parts
    ? `[Part ${part} of ${parts} of #${seq}: it is too large for one result. Continue with read_history from_seq ${seq} to_seq ${seq} part ${part + 1}${after ? `, then ${after}` : ''}.]`
    : `[Part ${part} of ${parts} of #${seq}, its end.${after ? ` Continue with read_history ${after}.` : ''}]`;
}

/**
 * A message's block cut to `maxTokens` as returned (indentation and marker included), with a marker
 * saying how to read it whole.
 */
function clippedBlock(message: StoredMessage, tokenizer: Tokenizer, maxTokens: number, hint: string): string {
  const whole = messageBlock(message);
  if (tokenizer.count(whole) <= maxTokens) return whole;
  const header = headerOf(message);
  const body = tokenizer.encode(bodyOf(message));
  const render = (keep: number) =>
    `${header}${indent(tokenizer.decode(body.slice(0, keep)))}\n${CONTINUATION}` +
    `[… clipped: ${body.length - keep} more tokens of #${message.seq}; ${hint}.]`;
  const most = Math.min(body.length, maxTokens);
  return render(mostThatFits((keep) => tokenizer.count(render(keep)), maxTokens, most, 0));
}

/**
 * The most of `available` tokens of a text whose rendering (`count(n)`: the tokens of the rendering
 * with `n` of them) fits `maxTokens`, and never fewer than `least`. Measured, not assumed: the
 * rendering indents lines, and tokens merge or split where text is cut and joined. Each try scales
 * down by how far over the last one was, so it takes a few counts, not one per token.
 */
function mostThatFits(
  count: (n: number) => number,
  maxTokens: number,
  available: number,
  least: number,
): number {
  const base = count(least);
  let n = available;
  for (;;) {
    const tokens = count(n);
    if (tokens <= maxTokens || n <= least) return n;
    const scaled =
      least + Math.floor(((n - least) * Math.max(0, maxTokens - base)) / Math.max(1, tokens - base));
    n = Math.max(least, Math.min(n - 1, scaled));
  }
}

function readWholeHint(seq: number): string {
  return `read_history from_seq ${seq} to_seq ${seq} shows it whole`;
}

/** `#1234 alice (2026-03-01T10:00:00Z): ` */
function headerOf(message: StoredMessage): string {
  const who = message.role === 'tool' ? `[tool ${quotedLabel(message.author)}]` : quotedLabel(message.author);
  const when = message.ts === undefined ? '' : ` (${quotedLine(readableTs(message.ts), 40)})`;
  return `#${message.seq} ${who}${when}: `;
}

/** The archived text as the model reads it, tool calls after it. */
function bodyOf(message: StoredMessage): string {
  const calls = (message.toolCalls ?? []).map((c) => `[called ${c.name} ${c.arguments}]`);
  return [plainText(message.text), ...calls].filter((part) => part !== '').join('\n');
}

export function messageBlock(message: StoredMessage): string {
  return `${headerOf(message)}${indent(bodyOf(message))}`;
}

function indent(text: string): string {
  return text.replaceAll('\n', `\n${CONTINUATION}`);
}

/** Slack's ts (`1700000000.000100`, seconds since the epoch) as an ISO time; other ts as stored. */
function readableTs(ts: string): string {
  if (!/^\d{9,11}\.\d+$/.test(ts)) return ts;
  return new Date(Math.floor(Number(ts) * 1000)).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
