/**
 * The queue package's error codes.
 *
 * | code                         | from                                                     | retryable |
 * | ---------------------------- | -------------------------------------------------------- | --------- |
 * | `redis_unavailable`          | `RedisUnavailableError`: not connected, or too slow      | yes       |
 * | `lock_timeout`               | `LockTimeoutError`: `withLock` waited too long           | yes       |
 * | `queue_closed`               | an enqueue after the inline queue was closed             | no        |
 * | `invalid_compaction_payload` | `InvalidCompactionPayloadError`: never worth a retry     | no        |
 * | `invalid_redis_prefix`       | a key prefix with `:` or glob characters                 | no        |
 */
import { EbbError } from '@ebb/core';

export const QUEUE_ERROR_CODES = [
  'redis_unavailable',
  'lock_timeout',
  'queue_closed',
  'invalid_compaction_payload',
  'invalid_redis_prefix',
] as const;
export type QueueErrorCode = (typeof QUEUE_ERROR_CODES)[number];

/** An error from the queue package, with one of `QUEUE_ERROR_CODES`. */
export class QueueError extends EbbError<QueueErrorCode> {}
