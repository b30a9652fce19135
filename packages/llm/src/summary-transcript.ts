/**
 * Archived messages as the summarizer shows them: one line per message, `[#seq] author: text`, with
 * continuation lines indented so no message can forge another's header. Lines are grouped in units
 * that are never split (an assistant message with tool calls and the tool results after it) and
 * packed into parts that fit a token budget. Pure: no I/O.
 */
import { clipToTokens, plainText, quotedLabel, type StoredMessage, type Tokenizer } from '@ebb/core';

export interface TranscriptLine {
  readonly seq: number;
  readonly text: string;
  /** Tokens of the line and its newline. */
  readonly tokens: number;
}

/** Lines that go to the model together: a message, or a tool call with its results. */
export interface TranscriptUnit {
  readonly lines: readonly TranscriptLine[];
  readonly tokens: number;
}

const CONTINUATION = '\n    ';

export function renderMessage(message: StoredMessage): string {
  const author = quotedLabel(message.author);
  const who =
    message.role === 'assistant'
      ? `${author} (assistant)`
      : message.role === 'tool'
        ? `${author} (tool result${message.toolCallId ? ` ${oneLine(message.toolCallId)}` : ''})`
        : author;
  let line = `[#${message.seq}] ${who}: ${indent(message.text)}`;
  for (const call of message.toolCalls ?? []) {
    line += `${CONTINUATION}→ calls ${oneLine(call.name)} (${oneLine(call.id)}) with ${indent(call.arguments)}`;
  }
  return line;
}

export function lineOf(message: StoredMessage, tokenizer: Tokenizer): TranscriptLine {
  const text = renderMessage(message);
  return { seq: message.seq, text, tokens: tokenizer.count(text) + 1 };
}

/** Groups messages, in order, into units; a `tool` message always joins the unit before it. */
export function toUnits(messages: readonly StoredMessage[], tokenizer: Tokenizer): TranscriptUnit[] {
  const groups: TranscriptLine[][] = [];
  for (const message of messages) {
    const line = lineOf(message, tokenizer);
    const last = groups.at(-1);
    if (message.role === 'tool' && last) last.push(line);
    else groups.push([line]);
  }
  return groups.map(unitOf);
}

export function unitOf(lines: readonly TranscriptLine[]): TranscriptUnit {
  return { lines, tokens: lines.reduce((sum, l) => sum + l.tokens, 0) };
}

/**
 * Packs units, in order, into parts of at most `budget` tokens each. A unit larger than the budget
 * gets a part of its own with its lines clipped to fit.
 */
export function packUnits(
  units: readonly TranscriptUnit[],
  budget: number,
  tokenizer: Tokenizer,
): TranscriptUnit[][] {
  const parts: TranscriptUnit[][] = [];
  let current: TranscriptUnit[] = [];
  let used = 0;
  for (const unit of units) {
    const fitted = unit.tokens > budget ? clipUnit(unit, budget, tokenizer) : unit;
    if (current.length > 0 && used + fitted.tokens > budget) {
      parts.push(current);
      current = [];
      used = 0;
    }
    current.push(fitted);
    used += fitted.tokens;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

/** Two halves by tokens, on a unit boundary; a single unit is clipped to half its size instead. */
export function halve(units: readonly TranscriptUnit[], tokenizer: Tokenizer): TranscriptUnit[][] {
  const [only] = units;
  if (units.length === 1 && only) return [[clipUnit(only, Math.floor(only.tokens / 2), tokenizer)]];
  const total = units.reduce((sum, u) => sum + u.tokens, 0);
  let used = 0;
  let cut = 0;
  while (cut < units.length - 1 && used + (units[cut]?.tokens ?? 0) <= total / 2)
    used += units[cut++]?.tokens ?? 0;
  cut = Math.max(1, cut);
  return [units.slice(0, cut), units.slice(cut)];
}

/** Shares `budget` among the unit's lines; a line over its share keeps its head and tail. */
export function clipUnit(unit: TranscriptUnit, budget: number, tokenizer: Tokenizer): TranscriptUnit {
  const share = Math.max(1, Math.floor(budget / unit.lines.length));
  return unitOf(
    unit.lines.map((line) => {
      if (line.tokens <= share) return line;
      const text = clipMiddle(line.text, tokenizer, share - 1);
      return { seq: line.seq, text, tokens: tokenizer.count(text) + 1 };
    }),
  );
}

/** Head and tail of `text` with a marker saying how much was left out, within `maxTokens`. */
export function clipMiddle(text: string, tokenizer: Tokenizer, maxTokens: number): string {
  const encoded = tokenizer.encode(text);
  if (encoded.length <= maxTokens) return text;
  const marker = (omitted: number) => ` […${omitted} tokens omitted…] `;
  const room = Math.max(0, maxTokens - tokenizer.count(marker(encoded.length)));
  const head = Math.ceil(room / 2);
  const tail = room - head;
  const clipped =
    tokenizer.decode(encoded.slice(0, head)) +
    marker(encoded.length - room) +
    (tail > 0 ? tokenizer.decode(encoded.slice(-tail)) : '');
  return clipToTokens(clipped, tokenizer, maxTokens);
}

/**
 * A Markdown fence longer than any run of backticks in `texts` (fullwidth `｀` counted as one too),
 * so no content can close it.
 */
export function fenceFor(texts: readonly string[]): string {
  let longest = 0;
  for (const text of texts) {
    for (const run of text.match(/[`\uFF40]+/g) ?? []) longest = Math.max(longest, run.length);
  }
  return '`'.repeat(Math.max(3, longest + 1));
}

/** An identifier (tool name, call id) as one bounded line. */
function oneLine(text: string): string {
  return quotedLabel(text, '');
}

function indent(text: string): string {
  // Every line break a model may honour becomes an indented one; hidden characters (bidi
  // overrides, smuggled tag characters) are gone, as everywhere channel text reaches a prompt.
  return plainText(text).replaceAll('\n', CONTINUATION);
}
