/**
 * The spooled message the file spool's tests push: `m<i>` in `channelKey`, said by ana at millisecond
 * `at` (by default `i`) of one morning, so that `i` orders the messages unless a test says otherwise.
 * Used by `file-inbound-spool.test.ts`, `spool-records.test.ts` and `merge-spool-entries.test.ts`.
 */
import type { SpooledMessage } from '@ebb/core';

export const spooledMessage = (channelKey: string, i: number, at = i): SpooledMessage => ({
  channelKey,
  role: 'user',
  author: 'ana',
  text: `update ${i}`,
  ts: new Date(Date.UTC(2026, 10, 24, 10, 0, 0, at)).toISOString(),
  platformMessageId: `m${i}`,
});
