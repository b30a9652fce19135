/**
 * Postgres going away under the pool: transactions that fail on a dead connection must give their
 * client back, or every outage shrinks the pool by one and shutdown hangs (drizzle-orm 0.45 runs
 * `begin` outside its try/finally; see releasingTransaction in create-db.ts).
 */

import { freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { sql } from 'drizzle-orm';
import { afterAll, expect, it } from 'vitest';
import { PgRunStore } from './pg-run-store.js';

let proxy: TcpProxy;
afterAll(() => proxy?.close());

it('gives every client back after transactions fail on a dead connection, and closes', async () => {
  const target = new URL(testDatabaseUrl());
  proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
  const url = new URL(testDatabaseUrl());
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  const fresh = await freshSchemaDb({ databaseUrl: url.toString(), poolSize: 4 });
  const pool = (fresh.db as unknown as { $client: { totalCount: number; idleCount: number } }).$client;
  const runs = new PgRunStore({ db: fresh.db });
  // Two idle connections in the pool when the network goes.
  await Promise.all([
    fresh.db.execute(sql`select pg_sleep(0.05)`),
    fresh.db.execute(sql`select pg_sleep(0.05)`),
  ]);

  proxy.cut();
  for (let i = 0; i < 6; i++)
    await expect(runs.start(`job-${i}`)).rejects.toMatchObject({ code: 'db_unavailable' });
  proxy.restore();

  // Every client came back (or was destroyed): the pool works and nothing is left checked out.
  expect(await runs.start('missing')).toBeUndefined();
  expect(pool.totalCount - pool.idleCount).toBe(0);
  await fresh.close();
});
