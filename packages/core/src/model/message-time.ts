/**
 * When a message was said, from its `ts` as the adapters and transcripts write it: ISO 8601 with a
 * zone, or without one (a transcript's `2004-12-25T09:14`), read as UTC. Undefined for anything else
 * (a Slack ts, nothing): the store's archive time stands in. The Postgres store applies the same rule
 * in SQL (`pg-redaction.ts`, `archiveTimes`).
 */
export function messageTime(ts: string | undefined): number | undefined {
  if (ts === undefined || !ISO_TIME.test(ts)) return undefined;
  const at = Date.parse(/(Z|[+-]\d{2}:?\d{2})$/.test(ts) ? ts : `${ts}Z`);
  return Number.isNaN(at) ? undefined : at;
}

/** An ISO 8601 date and time, seconds and zone optional. */
export const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;
