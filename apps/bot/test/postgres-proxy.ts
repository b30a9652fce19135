/**
 * A fresh schema reached through a TCP proxy the test can cut: Postgres "going away" under a running
 * Ebb without touching the shared server. `close` restores the proxy first so the pool can end.
 */
import { type FreshSchemaDb, freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { TcpProxy } from '@ebb/testing/tcp-proxy';

export async function postgresBehindProxy(): Promise<{
  readonly proxy: TcpProxy;
  readonly fresh: FreshSchemaDb;
  close(): Promise<void>;
}> {
  const target = new URL(testDatabaseUrl());
  const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
  const viaProxy = new URL(testDatabaseUrl());
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const fresh = await freshSchemaDb({ databaseUrl: viaProxy.toString() });
  return {
    proxy,
    fresh,
    async close() {
      proxy.restore();
      await fresh.close();
      await proxy.close();
    },
  };
}
