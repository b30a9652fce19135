/**
 * A summary made without a model: who took part, then the most informative lines of the range
 * (questions, decisions, numbers, links, commands) in their original order, then as much of the
 * earlier summaries as still fits. Deterministic and bounded by the summary budget, it serves
 * `ebb simulate` and is the fallback when the LLM keeps failing, so a pass still shrinks the context.
 */
import type { ArchivedMessage } from '../model/model.js';
import { clipToTokens, type Tokenizer } from '../model/tokens.js';

export interface ExtractiveInput {
  /** Texts of earlier summaries folded into this one, oldest first. */
  readonly earlierSummaries: readonly string[];
  /** The messages to summarize, oldest first. */
  readonly messages: readonly ArchivedMessage[];
  readonly maxTokens: number;
  readonly tokenizer: Tokenizer;
}

const MAX_LINE_CHARS = 240;
const MAX_PARTICIPANTS = 12;
/** Share of the budget earlier summaries may keep; the rest goes to the new messages. */
const EARLIER_SHARE = 0.4;

export function summarizeExtractive(input: ExtractiveInput): string {
  const { messages, tokenizer, maxTokens } = input;
  const first = messages[0];
  const last = messages.at(-1);
  const header =
    first && last
      ? `Participants: ${participants(messages)}. ${messages.length} messages (#${first.seq}–#${last.seq}).`
      : 'No new messages.';
  let used = tokenizer.count(header);
  if (used > maxTokens) return clipToTokens(header, tokenizer, maxTokens);

  // Earlier summaries first claim their share, newest lines first (they describe the latest past).
  const earlierLines = input.earlierSummaries
    .flatMap((s) => s.split('\n'))
    .filter((l) => l.trim().length > 0);
  const earlierBudget = Math.floor((maxTokens - used) * EARLIER_SHARE);
  const keptEarlier: string[] = [];
  let earlierUsed = 0;
  for (let i = earlierLines.length - 1; i >= 0; i--) {
    const line = earlierLines[i] ?? '';
    const cost = tokenizer.count(line) + 1;
    if (earlierUsed + cost > earlierBudget) break;
    keptEarlier.unshift(line);
    earlierUsed += cost;
  }
  used += earlierUsed;

  // Then the most informative new lines, chosen by score, printed in seq order.
  const ranked = messages
    .map((m, index) => ({ index, score: informationScore(m.text) }))
    .filter((c) => c.score > 0)
    .sort((x, y) => y.score - x.score || x.index - y.index);
  const chosen: { index: number; line: string }[] = [];
  let misses = 0;
  for (const c of ranked) {
    const m = messages[c.index];
    if (!m) continue;
    const line = `- ${m.author}: ${oneLine(m.text)}`;
    const cost = tokenizer.count(line) + 1;
    if (used + cost > maxTokens) {
      if (++misses > 20) break;
      continue;
    }
    chosen.push({ index: c.index, line });
    used += cost;
  }
  chosen.sort((x, y) => x.index - y.index);

  const parts = [header];
  if (keptEarlier.length > 0) parts.push('Earlier:', ...keptEarlier);
  if (chosen.length > 0) parts.push('Notable messages:', ...chosen.map((c) => c.line));
  const text = parts.join('\n');
  // Newline joins can merge tokens differently; the final count is the one that must hold.
  return tokenizer.count(text) <= maxTokens ? text : clipToTokens(text, tokenizer, maxTokens);
}

function participants(messages: readonly ArchivedMessage[]): string {
  const counts = new Map<string, number>();
  for (const m of messages) counts.set(m.author, (counts.get(m.author) ?? 0) + 1);
  const sorted = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const named = sorted.slice(0, MAX_PARTICIPANTS).map(([author, n]) => `${author} (${n})`);
  const others = sorted.length - named.length;
  return others > 0 ? `${named.join(', ')} and ${others} others` : named.join(', ');
}

/** A cheap proxy for how much a line is worth keeping: questions, decisions, numbers, links, code. */
export function informationScore(text: string): number {
  const length = text.length;
  if (length < 12) return 0;
  let score = Math.min(length, 200) / 200;
  if (text.includes('?')) score += 1;
  if (/\b(decid|agreed|will|todo|must|should|plan|deadline|fixed|because)\w*/i.test(text)) score += 1;
  if (/https?:\/\/|\b\d[\d.,:/-]*\d\b/.test(text)) score += 0.75;
  if (/[`$]|\/\w+\/|\b(sudo|apt|npm|git)\b/.test(text)) score += 0.5;
  return score;
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_LINE_CHARS ? `${flat.slice(0, MAX_LINE_CHARS - 1)}…` : flat;
}
