/**
 * Where a taken-back text could still be outside Postgres: Redis values (any type, read as the bytes
 * of a DUMP) and files under a data directory (the spool, the dead-letter file). The take-back tests
 * count both, next to the rows `rowsHolding` counts.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redis } from 'ioredis';

/** Keys matching `pattern` whose value holds `text`, whatever their type. */
export async function redisKeysHolding(redis: Redis, pattern: string, text: string): Promise<string[]> {
  const holding: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const dump = await redis.dumpBuffer(key);
      if (dump?.includes(text)) holding.push(key);
    }
  } while (cursor !== '0');
  return holding;
}

/** Files under `dir` (at any depth) holding `text`, relative to it; none when `dir` does not exist. */
export async function filesHolding(dir: string, text: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const holding: string[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if ((await readFile(path)).includes(text)) holding.push(path.slice(dir.length + 1));
  }
  return holding;
}
