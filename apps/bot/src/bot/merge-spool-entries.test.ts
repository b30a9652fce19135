/**
 * The two stores as one spool, as pure functions: the merged order and the ids tagged by store. The
 * same through `FallbackInboundSpool` on a real file and Redis is `inbound-spool.int.test.ts`.
 */
import type { SpoolEntry } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { spooledMessage } from '../../test/spooled-message.js';
import { mergeInOrder, splitIds } from './merge-spool-entries.js';

/** An entry of message `m<n>`, sent at millisecond `at`. */
const entry = (id: string, n: number, at: number): SpoolEntry => ({
  id,
  message: spooledMessage('web:a', n, at),
});

const shape = (entries: readonly SpoolEntry[]) =>
  entries.map((e) => `${e.message.platformMessageId}=${e.id}`);

describe('mergeInOrder', () => {
  it("merges oldest first, each store's order kept, a message both hold once with both ids", () => {
    const local = [entry('f1', 1, 1), entry('f2', 3, 3)];
    const shared = [entry('10', 2, 2), entry('11', 3, 3), entry('12', 4, 4)];
    expect(shape(mergeInOrder(local, shared))).toEqual(['m1=l:f1', 'm2=r:10', 'm3=l:f2 r:11', 'm4=r:12']);
  });

  it("keeps a store's own order even where its times are not (a merge, not a sort)", () => {
    const local = [entry('f1', 1, 5), entry('f2', 2, 1)];
    const shared = [entry('10', 3, 3)];
    expect(shape(mergeInOrder(local, shared))).toEqual(['m3=r:10', 'm1=l:f1', 'm2=l:f2']);
  });

  it('takes the file first when the times are equal, and either store alone as it is', () => {
    expect(shape(mergeInOrder([entry('f1', 1, 1)], [entry('10', 2, 1)]))).toEqual(['m1=l:f1', 'm2=r:10']);
    expect(shape(mergeInOrder([], [entry('10', 2, 1)]))).toEqual(['m2=r:10']);
    expect(shape(mergeInOrder([entry('f1', 1, 1)], []))).toEqual(['m1=l:f1']);
  });
});

describe('splitIds', () => {
  it('gives each store back its own ids from the merged ones', () => {
    const merged = mergeInOrder(
      [entry('f1', 1, 1), entry('f2', 3, 3)],
      [entry('10', 2, 2), entry('11', 3, 3)],
    );
    expect(splitIds(merged.map((e) => e.id))).toEqual({ local: ['f1', 'f2'], shared: ['10', '11'] });
    expect(splitIds([])).toEqual({ local: [], shared: [] });
  });
});
