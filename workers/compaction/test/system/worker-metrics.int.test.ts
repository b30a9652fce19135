/**
 * `ebb worker` with EBB_METRICS_HOST beyond loopback, as docker-compose.yml runs it for a Prometheus
 * in another container: a real worker process on a fresh schema and Redis prefix, asked from this
 * machine's non-loopback address. `/metrics` follows the bot's rule (`Bearer <EBB_METRICS_TOKEN>`),
 * `/healthz` stays open for the orchestrator's probe, and without a token the worker refuses to start.
 */
import { type AddressInfo, createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { fileURLToPath } from 'node:url';
import { emptySchema } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ebbWorkerProcess, type SpawnedWorker } from '../spawn-ebb-worker.js';

const REPO_CONFIG = fileURLToPath(new URL('../../../../config.toml', import.meta.url));
const TOKEN = 'worker-metrics-token-0123456789';

/** `ebb worker` with `env` over a clean environment; `ready` is its "worker metrics at" URL. */
function startWorker(env: Record<string, string>): SpawnedWorker & { readonly ready: Promise<string> } {
  const worker = ebbWorkerProcess({ config: REPO_CONFIG, env });
  const ready = worker.logged('worker.metrics_started').then((line) => String(line.url));
  ready.catch(() => {});
  return { ...worker, ready };
}

/** An IPv4 address of this machine that is not loopback: a client from it is not local. */
function lanAddress(): string {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
  if (address === undefined) throw new Error('this machine has no non-loopback IPv4 address to test from');
  return address;
}

describe('ebb worker with EBB_METRICS_HOST=0.0.0.0 and EBB_METRICS_TOKEN', () => {
  const prefix = randomPrefix();
  let schema: Awaited<ReturnType<typeof emptySchema>>;
  let worker: SpawnedWorker;
  let port: string;
  const from = lanAddress();

  beforeAll(async () => {
    schema = await emptySchema();
    const started = startWorker({
      DATABASE_URL: schema.url,
      REDIS_URL: redisUrl(),
      EBB_REDIS_PREFIX: prefix,
      EBB_METRICS_HOST: '0.0.0.0',
      EBB_METRICS_PORT: '0',
      EBB_METRICS_TOKEN: TOKEN,
    });
    worker = started;
    port = new URL(await started.ready).port;
  }, 60_000);
  afterAll(async () => {
    worker?.child.kill('SIGTERM');
    await worker?.exited;
    await schema?.drop();
    await dropPrefix(prefix);
  }, 60_000);

  const get = (host: string, path: string, token?: string) =>
    fetch(`http://${host}:${port}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});

  it('listens on every interface', () => {
    expect(worker.lines().find((l) => String(l.msg).startsWith('worker metrics at'))?.url).toBe(
      `http://0.0.0.0:${port}`,
    );
  });

  it('answers /metrics from another address only with the token', async () => {
    expect((await get(from, '/metrics')).status).toBe(401);
    expect((await get(from, '/metrics', 'not-the-metrics-token-at-all')).status).toBe(401);
    const scraped = await get(from, '/metrics', TOKEN);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^# HELP ebb_/m);
  });

  it('wants the token from loopback too, as the bot does once it is set', async () => {
    expect((await get('127.0.0.1', '/metrics')).status).toBe(401);
  });

  it('keeps /healthz open for the probe', async () => {
    const health = await get(from, '/healthz');
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true });
  });
});

describe('ebb worker with EBB_METRICS_HOST=0.0.0.0 and no EBB_METRICS_TOKEN', () => {
  it('refuses to start, in one line that names what to set, before it connects to anything', async () => {
    // Stand-ins for Postgres and Redis that only count who connects: a refusal comes first.
    const postgres = await countingListener();
    const redis = await countingListener();
    const started = startWorker({
      DATABASE_URL: `postgres://ebb@127.0.0.1:${postgres.port}/none`,
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      EBB_METRICS_HOST: '0.0.0.0',
    });
    expect(await started.exited).toBe(1);
    expect({ postgres: postgres.connections(), redis: redis.connections() }).toEqual({
      postgres: 0,
      redis: 0,
    });
    await Promise.all([postgres.close(), redis.close()]);
    await expect(started.ready).rejects.toThrow();
    const fatal = started.lines().filter((l) => l.level === 60);
    expect(fatal).toEqual([
      expect.objectContaining({
        error: 'start_refused',
        cause: expect.stringContaining('EBB_METRICS_HOST'),
        hint: expect.stringContaining('set EBB_METRICS_TOKEN'),
      }),
    ]);
  }, 60_000);
});

/** A TCP listener on a free loopback port that counts the connections it is offered and answers none. */
async function countingListener(): Promise<{
  readonly port: number;
  connections(): number;
  close(): Promise<void>;
}> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
