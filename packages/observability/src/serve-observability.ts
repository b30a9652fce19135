/**
 * A small HTTP server for a process that has no web channel (`ebb worker`): `/metrics` and
 * `/healthz` on their own port, for Prometheus and the orchestrator's probe.
 */
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { Hono } from 'hono';
import { mountObservability, type ObservabilityRoutesOptions } from './routes.js';

export interface ServeObservabilityOptions extends ObservabilityRoutesOptions {
  readonly host?: string;
  /** 0 for a free port. */
  readonly port?: number;
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
