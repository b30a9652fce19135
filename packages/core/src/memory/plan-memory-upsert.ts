/**
 * How a batch of extracted memories is written, the same in every store: deduplicated per scope and
 * fingerprint, importance clamped, in an order that cannot deadlock.
 */
import { memoryFingerprint, type NewMemory } from './memory.js';

export interface PlannedMemory {
  readonly memory: NewMemory;
  readonly fingerprint: string;
}

/**
 * A batch of memories as stores write it: one per scope and fingerprint (the first text, the highest
 * importance, clamped to 0..1), ordered by scope then fingerprint. The order is the order ids are
 * given in, and the order rows are locked in, so two concurrent upserts cannot deadlock.
 */
export function planMemoryUpsert(batch: readonly NewMemory[]): PlannedMemory[] {
  const byKey = new Map<string, PlannedMemory>();
  for (const m of batch) {
    const fingerprint = memoryFingerprint(m.type, m.text);
    const key = `${m.scope}\u0000${fingerprint}`;
    const importance = clampImportance(m.importance);
    const first = byKey.get(key);
    byKey.set(
      key,
      first
        ? {
            fingerprint,
            memory: { ...first.memory, importance: Math.max(first.memory.importance, importance) },
          }
        : { fingerprint, memory: { ...m, importance } },
    );
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, planned]) => planned);
}

/** Importance as stores keep it: within 0..1 (0 when not a number). */
export function clampImportance(importance: number): number {
  return Number.isFinite(importance) ? Math.min(1, Math.max(0, importance)) : 0;
}
