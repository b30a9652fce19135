import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ObservabilityServer,
  serveObservability,
  serveObservabilityOnDefaultPort,
} from './serve-observability.js';

const routes = {
  metrics: { metricsText: async () => 'ebb_up 1\n', contentType: 'text/plain' },
  health: async () => ({ ok: true, checks: {} }) as never,
};

/** A port some other process holds. */
async function takenPort(): Promise<{ port: number; holder: Server }> {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  return { port: (holder.address() as { port: number }).port, holder };
}

const open: { close(): Promise<void> | void }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
});

describe('serveObservabilityOnDefaultPort (a second ebb worker on one host)', () => {
  it('takes a free port when the default one is taken, and says so', async () => {
    const { port, holder } = await takenPort();
    open.push({ close: () => new Promise<void>((r) => holder.close(() => r())) });
    const { server, fellBack } = await serveObservabilityOnDefaultPort({ ...routes, defaultPort: port });
    open.push(server);
    expect(fellBack).toBe(true);
    expect(new URL(server.url).port).not.toBe(String(port));
    expect(await (await fetch(`${server.url}/metrics`)).text()).toBe('ebb_up 1\n');
  });

  it('uses the default port when it is free', async () => {
    const { port, holder } = await takenPort();
    await new Promise<void>((r) => holder.close(() => r()));
    const { server, fellBack }: { server: ObservabilityServer; fellBack: boolean } =
      await serveObservabilityOnDefaultPort({ ...routes, defaultPort: port });
    open.push(server);
    expect([fellBack, new URL(server.url).port]).toEqual([false, String(port)]);
  });

  it('fails on an explicit port that is taken', async () => {
    const { port, holder } = await takenPort();
    open.push({ close: () => new Promise<void>((r) => holder.close(() => r())) });
    await expect(serveObservabilityOnDefaultPort({ ...routes, port })).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
  });
});

describe('serveObservability with a guard (ebb worker beyond loopback)', () => {
  it('runs the guard in front of the routes', async () => {
    const server = await serveObservability({
      ...routes,
      port: 0,
      guard: (app) =>
        app.use('/metrics', async (c, next) =>
          c.req.header('authorization') === 'Bearer right' ? next() : c.text('no', 401),
        ),
    });
    open.push(server);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    const allowed = await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer right' } });
    expect([allowed.status, await allowed.text()]).toEqual([200, 'ebb_up 1\n']);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
