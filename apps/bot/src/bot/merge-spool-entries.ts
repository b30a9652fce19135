/**
 * How `FallbackInboundSpool` (`fallback-inbound-spool.ts`) makes one spool of two, pure (no I/O): a
 * read merges the file's entries and Redis's into one order, each id tagged with the store it lives
 * in, and a removal splits those ids back into each store's own.
 */
import type { SpoolEntry } from '@ebb/core';

/** Tags a store's id so `remove` knows where it lives: `l:` the file, `r:` Redis; a message both hold is `l:… r:…`. */
const LOCAL = 'l:';
const SHARED = 'r:';

/**
 * The file's entries and Redis's, oldest first by the message's time; each store's own order is
 * kept (a merge, not a sort), and a Redis entry the file also holds travels with the file's entry.
 */
export function mergeInOrder(local: readonly SpoolEntry[], shared: readonly SpoolEntry[]): SpoolEntry[] {
  const copies = new Map(shared.map((e) => [e.message.platformMessageId, e.id]));
  const mine = local.map((e) => {
    const copy = copies.get(e.message.platformMessageId);
    copies.delete(e.message.platformMessageId);
    return { id: `${LOCAL}${e.id}${copy === undefined ? '' : ` ${SHARED}${copy}`}`, message: e.message };
  });
  const localIds = new Set(local.map((e) => e.message.platformMessageId));
  const theirs = shared
    .filter((e) => !localIds.has(e.message.platformMessageId))
    .map((e) => ({ id: `${SHARED}${e.id}`, message: e.message }));
  const merged: SpoolEntry[] = [];
  let i = 0;
  let j = 0;
  while (i < mine.length || j < theirs.length) {
    const a = mine[i];
    const b = theirs[j];
    if (a !== undefined && (b === undefined || a.message.ts <= b.message.ts)) {
      merged.push(a);
      i++;
    } else if (b !== undefined) {
      merged.push(b);
      j++;
    }
  }
  return merged;
}

/** The merged ids back in each store's own: `['l:f3 r:12', 'r:14']` → `{ local: ['f3'], shared: ['12', '14'] }`. */
export function splitIds(ids: readonly string[]): { local: string[]; shared: string[] } {
  const parts = ids.flatMap((id) => id.split(' '));
  const of = (tag: string) => parts.filter((p) => p.startsWith(tag)).map((p) => p.slice(tag.length));
  return { local: of(LOCAL), shared: of(SHARED) };
}
