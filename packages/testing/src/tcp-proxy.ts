/**
 * A TCP proxy in front of a real service (Postgres, Redis) that a test can cut and restore, to show
 * what Ebb does when the service goes away and comes back: `cut()` drops every open connection and
 * refuses new ones; `restore()` accepts again.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #down = false;
  #port = 0;

  private constructor(targetHost: string, targetPort: number) {
    this.#server = createServer((client) => {
      if (this.#down) {
        client.destroy();
        return;
      }
      const upstream = connect(targetPort, targetHost);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target.host, target.port);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    const address = proxy.#server.address();
    proxy.#port = typeof address === 'object' && address ? address.port : 0;
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  /** Drops every connection and refuses new ones. */
  cut(): void {
    this.#down = true;
    for (const s of this.#sockets) s.destroy();
  }

  restore(): void {
    this.#down = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
