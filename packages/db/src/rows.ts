/** Small helpers for turning driver rows into the core's values. */
import { platformOf } from '@ebb/core';
import { DbError } from './pg-errors.js';

/** The `platform` column of a channel row: `slack:T1:C1` → `slack`. */
export function platformColumn(channelKey: string): string {
  const platform = platformOf(channelKey);
  if (platform === undefined) {
    throw new DbError(`not a channel key (slack:, discord: or web:): ${channelKey}`, {
      code: 'invalid_channel_key',
    });
  }
  return platform;
}

/** Rows of a raw `execute` (both drivers return `{ rows }`). */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

type WithoutNulls<T> = { [K in keyof T as null extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as null extends T[K] ? K : never]?: Exclude<T[K], null>;
};

/** Drops null columns, so an absent optional field is absent (not null) as the core expects. */
export function withoutNulls<T extends object>(row: T): WithoutNulls<T> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) if (value !== null) out[key] = value;
  return out as WithoutNulls<T>;
}
