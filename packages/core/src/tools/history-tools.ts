/**
 * The built-in tools over a channel's own archive. Once old messages are summarized the model sees
 * only the summary; these give it their exact words back:
 *
 * - `search_history(query, from?, to?, author?)`: the best matching messages (full-text search);
 * - `read_history(from_seq, to_seq, part?)`: a seq range as archived, e.g. one a summary names.
 *
 * What the model reads is plain text, one block per message: `#1234 alice (2026-03-01T10:00:00Z): …`,
 * the text after the header, every further line of it indented by two spaces so that no archived
 * line can pass for another message's header. A result never exceeds the channel's result budget
 * (`maxResultTokens`, counted with the channel's tokenizer on the text as returned): read_history
 * stops before the first message that does not fit and says where to continue; a message larger than
 * a whole result is cut into numbered parts, read one per call. A running Ebb sizes the budget to what
 * the channel's context keeps whole (`historyResultTokens`), so no result is ever clipped in the
 * context, where its middle could not be read back. Bad arguments come back as `isError` outcomes
 * with a sentence, never as a throw.
 */

import { MESSAGE_OVERHEAD_TOKENS, type Tokenizer } from '../model/tokens.js';
import type { Tool, ToolCallContext, ToolOutcome, ToolSpec } from '../ports/tool-ports.js';
import { errorText } from '../support/error-text.js';
import { quotedLine } from '../support/untrusted-text.js';
import {
  ARCHIVE_SEARCH,
  type ArchiveSearch,
  HISTORY_TOOL_NAMES,
  searchedQueryText,
} from './archive-search.js';
import {
  Budget,
  HISTORY_RENDERING,
  messageBlock,
  partOf,
  type ResultBudget,
  renderSearch,
  type SearchedFor,
} from './history-rendering.js';

export interface HistoryToolsOptions {
  /** The tokenizer of the channel's model: results are measured in its tokens. */
  tokenizerFor(channelKey: string): Promise<Tokenizer>;
  /**
   * The most tokens one result may take in the context: the same for every channel, or per channel
   * (a running Ebb gives `historyResultTokens` of the channel's `message_max_tokens`). A per-channel
   * budget below `HISTORY_TOOLS.minResultTokens` is raised to it.
   */
  maxResultTokens: number | ((channelKey: string) => number);
}

export const HISTORY_TOOLS = {
  /** Matches a search asks the archive for; those that fit the budget are shown. */
  searchLimit: 50,
  /** Messages read_history fetches at a time, so a range of huge messages is not read all at once. */
  readPage: 64,
  /** The widest seq range one read_history call accepts. */
  maxReadSpan: 100_000,
  maxAuthorChars: 200,
  /** The smallest budget a result can be useful in. */
  minResultTokens: 200,
  /**
   * The largest budget: a result is read in the turn's prompt, and a long range is better read in
   * steps than crowd out the conversation.
   */
  maxResultTokens: 4_000,
  /** searchMatchShare: the result's budget, kept beside the rendering that spends it. */
  ...HISTORY_RENDERING,
} as const;

/**
 * The result budget of a channel whose context clips a message above `messageMaxTokens` (its
 * `compaction.message_max_tokens`): a tool result is a message of the context like any other, and a
 * clipped one loses its middle for good (reading it again gives the same result, clipped the same
 * way). So a result is at most what the context keeps whole, less the message's own overhead, and at
 * most `HISTORY_TOOLS.maxResultTokens`.
 */
export function historyResultTokens(messageMaxTokens: number): number {
  return Math.max(
    HISTORY_TOOLS.minResultTokens,
    Math.min(HISTORY_TOOLS.maxResultTokens, messageMaxTokens - MESSAGE_OVERHEAD_TOKENS),
  );
}

const [SEARCH_HISTORY, READ_HISTORY] = HISTORY_TOOL_NAMES;

const SEARCH_HISTORY_SPEC: ToolSpec = {
  name: SEARCH_HISTORY,
  description:
    "Search this channel's whole message archive, including messages that were summarized away, " +
    'and get the best matching messages back word for word, with their seq numbers (#n), authors ' +
    'and times. Every word of the query must appear (English word forms match: "deploy" finds ' +
    '"deployed"); use "quotes" for a phrase, `or` between alternatives, -word to exclude. Very common ' +
    'words are ignored. Use read_history to read around a match.',
  parameters: {
    type: 'object',
    properties: {
      query: {
        type: 'string',
        description: 'The words to find.',
        maxLength: ARCHIVE_SEARCH.maxQueryChars,
      },
      from: { type: 'integer', minimum: 1, description: 'Only messages with seq >= from.' },
      to: { type: 'integer', minimum: 1, description: 'Only messages with seq <= to.' },
      author: { type: 'string', description: 'Only messages by this author (as shown in results).' },
    },
    required: ['query'],
    additionalProperties: false,
  },
};

const READ_HISTORY_SPEC: ToolSpec = {
  name: READ_HISTORY,
  description:
    "Read this channel's archived messages from_seq..to_seq word for word (seqs as in #n, e.g. the " +
    'range a summary names or the seq of a search match). A long range stops where the result is ' +
    'full and says where to continue; a message too large for one result comes in parts (part 2, 3, …).',
  parameters: {
    type: 'object',
    properties: {
      from_seq: { type: 'integer', minimum: 1, description: 'First seq to read.' },
      to_seq: { type: 'integer', minimum: 1, description: 'Last seq to read (inclusive).' },
      part: {
        type: 'integer',
        minimum: 1,
        description: 'For one message too large for a result (from_seq = to_seq): which part to read.',
      },
    },
    required: ['from_seq', 'to_seq'],
    additionalProperties: false,
  },
};

/**
 * The built-in tools' definitions, in the order a channel is offered them: what a process without
 * the bot's toolbox (`ebb status`, `ebb simulate`) counts as the room they take in every prompt.
 */
export const HISTORY_TOOL_SPECS: readonly ToolSpec[] = [SEARCH_HISTORY_SPEC, READ_HISTORY_SPEC];

export function historyTools(search: ArchiveSearch, options: HistoryToolsOptions): readonly Tool[] {
  if (
    typeof options.maxResultTokens === 'number' &&
    !(options.maxResultTokens >= HISTORY_TOOLS.minResultTokens)
  ) {
    throw new RangeError(
      `maxResultTokens must be at least ${HISTORY_TOOLS.minResultTokens}, got ${options.maxResultTokens}`,
    );
  }
  return [searchHistoryTool(search, options), readHistoryTool(search, options)];
}

function searchHistoryTool(search: ArchiveSearch, options: HistoryToolsOptions): Tool {
  return {
    spec: SEARCH_HISTORY_SPEC,
    async call(args, context) {
      const parsed = parseSearchArgs(args);
      if (typeof parsed === 'string') return failure(parsed);
      return guarded(SEARCH_HISTORY, context, async () => {
        const tokenizer = await options.tokenizerFor(context.channelKey);
        const query = { ...parsed, limit: HISTORY_TOOLS.searchLimit };
        let found = await search.search(context.channelKey, query);
        let loosened = false;
        // All words or none is strict for a model guessing at wording: when no message has every
        // word, the messages with any of them are better than nothing, and the header says so.
        const words = parsed.text.trim().split(/\s+/);
        if (found.length === 0 && words.length > 1 && !/"|(^|\s)-|\bor\b/i.test(parsed.text)) {
          found = await search.search(context.channelKey, { ...query, text: words.join(' or ') });
          loosened = found.length > 0;
        }
        const maxTokens = resultTokens(options, context.channelKey);
        return renderSearch(parsed, found, loosened, { tokenizer, maxTokens });
      });
    },
  };
}

function readHistoryTool(search: ArchiveSearch, options: HistoryToolsOptions): Tool {
  return {
    spec: READ_HISTORY_SPEC,
    async call(args, context) {
      const parsed = parseReadArgs(args);
      if (typeof parsed === 'string') return failure(parsed);
      return guarded(READ_HISTORY, context, async () => {
        const tokenizer = await options.tokenizerFor(context.channelKey);
        const maxTokens = resultTokens(options, context.channelKey);
        return readRange(search, context.channelKey, parsed, { tokenizer, maxTokens });
      });
    },
  };
}

/** The calling channel's result budget. */
function resultTokens(options: HistoryToolsOptions, channelKey: string): number {
  const { maxResultTokens } = options;
  if (typeof maxResultTokens === 'number') return maxResultTokens;
  const tokens = maxResultTokens(channelKey);
  return Number.isFinite(tokens)
    ? Math.max(HISTORY_TOOLS.minResultTokens, Math.floor(tokens))
    : HISTORY_TOOLS.minResultTokens;
}

// ---- arguments ----

interface ReadArgs {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly part?: number;
}

/** The arguments, or a sentence saying what is wrong with them. */
function parseSearchArgs(args: unknown): SearchedFor | string {
  if (!isRecord(args)) return 'search_history takes an object like {"query": "words to find"}.';
  const { query, from, to, author } = args;
  if (typeof query !== 'string' || query.trim() === '') {
    return 'search_history needs a non-empty "query": the words to find.';
  }
  if (query.length > ARCHIVE_SEARCH.maxQueryChars) {
    return `The query is ${query.length} characters long; use at most ${ARCHIVE_SEARCH.maxQueryChars}: a few distinctive words.`;
  }
  const fromSeq = optionalSeq(from, 'from');
  if (typeof fromSeq === 'string') return fromSeq;
  const toSeq = optionalSeq(to, 'to');
  if (typeof toSeq === 'string') return toSeq;
  if (fromSeq !== undefined && toSeq !== undefined && fromSeq > toSeq) {
    return `"from" (${fromSeq}) is after "to" (${toSeq}); give from <= to.`;
  }
  if (author !== undefined && (typeof author !== 'string' || author.trim() === '')) {
    return '"author" must be a non-empty string (a name as results show it), or left out.';
  }
  if (typeof author === 'string' && author.length > HISTORY_TOOLS.maxAuthorChars) {
    return `"author" is longer than ${HISTORY_TOOLS.maxAuthorChars} characters; no author is.`;
  }
  return {
    text: searchedQueryText(query),
    ...(fromSeq === undefined ? {} : { fromSeq }),
    ...(toSeq === undefined ? {} : { toSeq }),
    ...(typeof author === 'string' ? { author: author.trim() } : {}),
  };
}

function parseReadArgs(args: unknown): ReadArgs | string {
  if (!isRecord(args)) return 'read_history takes an object like {"from_seq": 120, "to_seq": 480}.';
  const fromSeq = optionalSeq(args.from_seq, 'from_seq');
  if (typeof fromSeq === 'string') return fromSeq;
  const toSeq = optionalSeq(args.to_seq, 'to_seq');
  if (typeof toSeq === 'string') return toSeq;
  if (fromSeq === undefined || toSeq === undefined) {
    return 'read_history needs both "from_seq" and "to_seq" (seq numbers as in #120).';
  }
  if (fromSeq > toSeq)
    return `"from_seq" (${fromSeq}) is after "to_seq" (${toSeq}); give from_seq <= to_seq.`;
  if (toSeq - fromSeq + 1 > HISTORY_TOOLS.maxReadSpan) {
    return `#${fromSeq}–#${toSeq} spans ${toSeq - fromSeq + 1} seqs; read at most ${HISTORY_TOOLS.maxReadSpan} per call (each call stops when its result is full anyway).`;
  }
  const part = optionalSeq(args.part, 'part');
  if (typeof part === 'string') return part;
  if (part !== undefined && fromSeq !== toSeq) {
    return '"part" is for one message too large for a result: give from_seq = to_seq with it.';
  }
  return { fromSeq, toSeq, ...(part === undefined ? {} : { part }) };
}

/**
 * A seq the model gave: an integer from 1 to Postgres' integer limit, as a number or as digits in a
 * string (`"120"`, `"#120"`, as a summary writes it), which models send now and then.
 */
function optionalSeq(value: unknown, name: string): number | undefined | string {
  if (value === undefined || value === null) return undefined;
  const n =
    typeof value === 'string' && /^\s*#?\d+\s*$/.test(value) ? Number(value.replace(/[#\s]/g, '')) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > ARCHIVE_SEARCH.maxSeq) {
    return `"${name}" must be a whole seq number from 1 to ${ARCHIVE_SEARCH.maxSeq}, got ${quotedLine(JSON.stringify(value) ?? String(value), 40)}.`;
  }
  return n;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---- results ----

function failure(text: string): ToolOutcome {
  return { text, isError: true };
}

/** Runs the call; a failure of the archive (database down, call aborted) becomes an error outcome. */
async function guarded(
  name: string,
  context: ToolCallContext,
  run: () => Promise<ToolOutcome>,
): Promise<ToolOutcome> {
  try {
    context.signal.throwIfAborted();
    return await run();
  } catch (err) {
    const reason = context.signal.aborted ? 'it was cancelled (timeout or shutdown)' : errorSentence(err);
    return failure(`${name} could not read the archive: ${reason}. Try again later.`);
  }
}

function errorSentence(err: unknown): string {
  return quotedLine(errorText(err), 200) || 'unknown error';
}

async function readRange(
  search: ArchiveSearch,
  channelKey: string,
  args: ReadArgs,
  resultBudget: ResultBudget,
): Promise<ToolOutcome> {
  const { fromSeq, toSeq } = args;
  const { tokenizer, maxTokens } = resultBudget;
  const range = `#${fromSeq}–#${toSeq}`;
  if (args.part !== undefined) {
    const [message] = await search.read(channelKey, fromSeq, fromSeq, 1);
    if (!message) return { text: `No archived message #${fromSeq} in this channel.`, isError: false };
    return partOf(message, args.part, resultBudget);
  }
  // The first and last lines are measured as written, with the widest seqs they can name.
  const headOf = (stopped: boolean) =>
    `Archived messages ${range}${stopped ? ' (first part)' : ''}. Lines after a message’s first are indented.`;
  const stopOf = (last: number, next: number) =>
    `[Stopped at the result's size limit after #${last}; continue with read_history from_seq ${next} to_seq ${toSeq}.]`;
  const end = `[End of ${range}.]`;
  const frame =
    tokenizer.count(headOf(true)) + Math.max(tokenizer.count(stopOf(toSeq, toSeq)), tokenizer.count(end)) + 2;
  const budget = new Budget(tokenizer, maxTokens - frame);
  const blocks: string[] = [];
  let next = fromSeq;
  let stop: string | undefined;
  reading: while (next <= toSeq) {
    const page = await search.read(channelKey, next, toSeq, HISTORY_TOOLS.readPage);
    for (const message of page) {
      const block = messageBlock(message);
      if (budget.take(block)) {
        blocks.push(block);
        next = message.seq + 1;
        continue;
      }
      if (blocks.length === 0) return partOf(message, 1, resultBudget, toSeq);
      stop = stopOf(next - 1, message.seq);
      break reading;
    }
    if (page.length < HISTORY_TOOLS.readPage) break;
  }
  if (blocks.length === 0)
    return { text: `No archived messages in ${range} in this channel.`, isError: false };
  return { text: `${headOf(stop !== undefined)}\n${blocks.join('\n')}\n${stop ?? end}`, isError: false };
}
