/**
 * A small HTTP server for a process that has no web channel (`ebb worker`): `/metrics` and
 * `/healthz` on their own port, for Prometheus and the orchestrator's probe. Who may reach them is
 * not decided here: the caller passes a `guard` (`ebb worker` passes the bot's rule, `mountGuards` of
 * `@ebb/web`). This package does not import the web adapter: compaction, which uses it, would then.
 */
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { Hono } from 'hono';
import { mountObservability, type ObservabilityRoutesOptions } from './routes.js';

export interface ServeObservabilityOptions extends ObservabilityRoutesOptions {
  readonly host?: string;
  /** 0 for a free port. */
  readonly port?: number;
  /**
   * Mounts middleware in front of the routes (access control). Without one, anyone who reaches
   * `host` may read both routes: fine on loopback, not beyond it.
   */
  readonly guard?: (app: Hono) => void;
}

export const DEFAULT_SERVE_OPTIONS = {
  host: '127.0.0.1',
  port: 9464,
} as const satisfies Required<Pick<ServeObservabilityOptions, 'host' | 'port'>>;

export interface ObservabilityServer {
  /** The bound address, e.g. `http://127.0.0.1:9464`. */
  readonly url: string;
  close(): Promise<void>;
}

export async function serveObservability(options: ServeObservabilityOptions): Promise<ObservabilityServer> {
  const host = options.host ?? DEFAULT_SERVE_OPTIONS.host;
  const app = new Hono();
  options.guard?.(app);
  mountObservability(app, options);
  const { server, port } = await new Promise<{ server: ServerType; port: number }>((resolve, reject) => {
    const started = serve(
      { fetch: app.fetch, hostname: host, port: options.port ?? DEFAULT_SERVE_OPTIONS.port },
      (info: AddressInfo) => resolve({ server: started, port: info.port }),
    );
    started.once('error', reject);
  });
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * `serveObservability` for a process of which a host may run several (`ebb worker`): an explicit
 * `port` is used or the start fails (`EADDRINUSE`); without one, the default port, or a free port when
 * another process already has the default (`fellBack`), so a second worker does not die on it.
 */
export async function serveObservabilityOnDefaultPort(
  options: Omit<ServeObservabilityOptions, 'port'> & {
    readonly port?: number | undefined;
    readonly defaultPort?: number;
  },
): Promise<{ readonly server: ObservabilityServer; readonly fellBack: boolean }> {
  const { port, defaultPort = DEFAULT_SERVE_OPTIONS.port, ...rest } = options;
  if (port !== undefined) return { server: await serveObservability({ ...rest, port }), fellBack: false };
  try {
    return { server: await serveObservability({ ...rest, port: defaultPort }), fellBack: false };
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EADDRINUSE') throw err;
    return { server: await serveObservability({ ...rest, port: 0 }), fellBack: true };
  }
}
