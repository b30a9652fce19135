/**
 * The rule a memory must pass before it is stored. A summarizer's memories are the model's words
 * and numbers, and the model reads whatever the channel said: an 800-character "speaker", seqs
 * outside the pass, a type of its own invention. `validateMemories` turns proposals into memories
 * that hold these, or leaves them out:
 *
 * | field        | rule                                             | otherwise                                   |
 * | ------------ | ------------------------------------------------ | ------------------------------------------- |
 * | the memory   | an object with a string text                     | rejected `malformed`                        |
 * | `type`       | one of `MEMORY_TYPES`, exactly                   | rejected `unknown_type`                     |
 * | `text`       | trimmed, not empty, no NUL, ≤ `MAX_MEMORY_TOKENS`| rejected `empty_text` / `text_too_long`; NUL removed (repaired `text_nul`) |
 * | `importance` | a finite number in 0..1                          | clamped (repaired `importance`); not a finite number: rejected `bad_importance` |
 * | `speaker`    | an author of the pass's range, or none           | another spelling of one (case, spaces): that author (repaired `speaker_spelling`); anyone else: none (repaired `speaker_unknown`) |
 * | `fromSeq..toSeq` | integers, from ≤ to, inside the pass's range | swapped, or cut to the range (repaired `seq_range`); not integers, or nothing of them inside the range: rejected `no_source` |
 *
 * Why repair rather than reject: a wrong speaker is metadata the model got wrong about a fact that
 * may well be right. A speaker that is no author of the range becomes none rather than a guess, so a
 * memory never names someone who did not speak there. A memory whose type, text or importance is not
 * usable has nothing left worth keeping.
 *
 * Seqs are the exception: they are what `ebb forget --id` redacts, the messages a memory came from.
 * A memory whose seqs name no message of its pass has no known source. Stored with the whole pass
 * as its range (as it once was), forgetting that one memory redacted every message of the pass and
 * summarized the pass again from nothing; stored with one end of the range, it named a source it
 * never had. So it is not stored: a fact worth keeping comes back, with its seqs, in a later pass.
 * Seqs that stick out of the pass keep the part inside it, which the model did name.
 */

import type { Tokenizer } from '../model/tokens.js';
import type { ExtractedMemory } from '../ports/ports.js';
import { MEMORY_TYPES, type MemoryType } from './memory.js';
import { clampImportance } from './plan-memory-upsert.js';

/** Bound on a memory's text: one self-contained sentence or two, not a paragraph of transcript. */
export const MAX_MEMORY_TOKENS = 200;

export const MEMORY_REJECT_REASONS = [
  'malformed',
  'unknown_type',
  'empty_text',
  'text_too_long',
  'bad_importance',
  'no_source',
] as const;
export type MemoryRejectReason = (typeof MEMORY_REJECT_REASONS)[number];

export const MEMORY_REPAIR_REASONS = [
  'text_nul',
  'importance',
  'speaker_spelling',
  'speaker_unknown',
  'seq_range',
] as const;
export type MemoryRepairReason = (typeof MEMORY_REPAIR_REASONS)[number];

export interface MemoryValidationContext {
  /** The pass's range: a memory's source lies inside it. */
  readonly fromSeq: number;
  readonly toSeq: number;
  /** The authors of the pass's range, as the archive spells them. */
  readonly authors: Iterable<string>;
  /** Counts the text against `maxTokens`. */
  readonly tokenizer: Tokenizer;
  /** Default `MAX_MEMORY_TOKENS`. */
  readonly maxTokens?: number;
}

export interface MemoryValidation {
  /** The memories that may be stored, in the order proposed. */
  readonly memories: ExtractedMemory[];
  /** How many proposals were left out, by reason (only reasons that occurred). */
  readonly rejected: Partial<Record<MemoryRejectReason, number>>;
  /** How many fields were repaired, by reason (a memory may count under several). */
  readonly repaired: Partial<Record<MemoryRepairReason, number>>;
}

const TYPES: ReadonlySet<string> = new Set(MEMORY_TYPES);

/**
 * Checks what a summarizer proposed (typed `unknown`: it is model output, or a checkpoint read back
 * from JSON) against the pass it came from. Pure; the same proposals give the same result, so
 * validating a checkpoint again on a retry changes nothing.
 */
export function validateMemories(
  proposed: readonly unknown[],
  context: MemoryValidationContext,
): MemoryValidation {
  const maxTokens = context.maxTokens ?? MAX_MEMORY_TOKENS;
  const authors = authorIndex(context.authors);
  const memories: ExtractedMemory[] = [];
  const rejected: Partial<Record<MemoryRejectReason, number>> = {};
  const repaired: Partial<Record<MemoryRepairReason, number>> = {};
  const reject = (reason: MemoryRejectReason) => {
    rejected[reason] = (rejected[reason] ?? 0) + 1;
  };
  const repair = (reason: MemoryRepairReason) => {
    repaired[reason] = (repaired[reason] ?? 0) + 1;
  };

  for (const candidate of proposed) {
    if (typeof candidate !== 'object' || candidate === null) {
      reject('malformed');
      continue;
    }
    const m = candidate as Record<string, unknown>;
    if (typeof m.text !== 'string') {
      reject('malformed');
      continue;
    }
    if (typeof m.type !== 'string' || !TYPES.has(m.type)) {
      reject('unknown_type');
      continue;
    }
    const withoutNul = m.text.replaceAll('\u0000', '');
    const text = withoutNul.trim();
    if (text === '') {
      reject('empty_text');
      continue;
    }
    if (context.tokenizer.count(text) > maxTokens) {
      reject('text_too_long');
      continue;
    }
    if (typeof m.importance !== 'number' || !Number.isFinite(m.importance)) {
      reject('bad_importance');
      continue;
    }
    const seqs = seqRange(m.fromSeq, m.toSeq, context);
    if (seqs === undefined) {
      reject('no_source');
      continue;
    }
    // Kept: what was repaired is counted now, so a memory left out counts once, as rejected.
    if (withoutNul !== m.text) repair('text_nul');
    const importance = clampImportance(m.importance);
    if (importance !== m.importance) repair('importance');
    if (seqs.repaired) repair('seq_range');
    const speaker = speakerOf(m.speaker, authors, repair);
    memories.push({
      type: m.type as MemoryType,
      text,
      importance,
      ...(speaker === undefined ? {} : { speaker }),
      fromSeq: seqs.fromSeq,
      toSeq: seqs.toSeq,
    });
  }
  return { memories, rejected, repaired };
}

/** Total of a by-reason count. */
export function countOf(counts: Partial<Record<string, number>>): number {
  return Object.values(counts).reduce<number>((n, c) => n + (c ?? 0), 0);
}

/** The authors by themselves and by a loose key (case and spaces folded), the loose key only when unambiguous. */
function authorIndex(authors: Iterable<string>) {
  const exact = new Set<string>();
  const loose = new Map<string, string | null>();
  for (const author of authors) {
    exact.add(author);
    const key = looseKey(author);
    const seen = loose.get(key);
    loose.set(key, seen === undefined || seen === author ? author : null);
  }
  return { exact, loose };
}

function looseKey(name: string): string {
  return name.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();
}

function speakerOf(
  value: unknown,
  authors: ReturnType<typeof authorIndex>,
  repair: (reason: MemoryRepairReason) => void,
): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    repair('speaker_unknown');
    return undefined;
  }
  if (value.trim() === '') return undefined;
  if (authors.exact.has(value)) return value;
  const author = authors.loose.get(looseKey(value));
  if (author) {
    repair('speaker_spelling');
    return author;
  }
  repair('speaker_unknown');
  return undefined;
}

/**
 * Seqs inside the pass: swapped when reversed, cut to the range when they stick out; none when they
 * are not integers or miss the range altogether (the memory then has no known source).
 */
function seqRange(
  from: unknown,
  to: unknown,
  pass: { readonly fromSeq: number; readonly toSeq: number },
): { fromSeq: number; toSeq: number; repaired: boolean } | undefined {
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) return undefined;
  const lo = Math.min(from as number, to as number);
  const hi = Math.max(from as number, to as number);
  if (hi < pass.fromSeq || lo > pass.toSeq) return undefined;
  const fromSeq = Math.max(lo, pass.fromSeq);
  const toSeq = Math.min(hi, pass.toSeq);
  return { fromSeq, toSeq, repaired: fromSeq !== from || toSeq !== to };
}
