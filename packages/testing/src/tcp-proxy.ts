/**
 * A TCP proxy in front of a real service (Postgres, Redis) that a test can cut, stall and restore, to
 * show what Ebb does when the service goes away and comes back: `cut()` drops every connection and
 * each new one; `stall()` keeps them all open and carries nothing; `restore()` carries bytes again.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

type Mode = 'open' | 'cut' | 'stalled';

/** One client's connection and the proxy's connection upstream for it. */
interface Link {
  readonly client: Socket;
  readonly upstream: Socket;
}

export class TcpProxy {
  readonly #server: Server;
  readonly #links = new Set<Link>();
  #mode: Mode = 'open';
  #port = 0;

  private constructor(targetHost: string, targetPort: number) {
    // Half-open allowed on both sides, so neither answers a FIN by itself: in the open mode `pipe`
    // passes each side's end to the other; stalled, an end goes nowhere.
    this.#server = createServer({ allowHalfOpen: true }, (client) => {
      if (this.#mode === 'cut') {
        client.destroy();
        return;
      }
      const upstream = connect({ port: targetPort, host: targetHost, allowHalfOpen: true });
      const link: Link = { client, upstream };
      this.#links.add(link);
      for (const s of [link.client, link.upstream]) {
        s.on('close', () => this.#links.delete(link));
        s.on('error', () => {
          link.client.destroy();
          link.upstream.destroy();
        });
      }
      if (this.#mode === 'open') carry(link);
      else hold(link);
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

  /**
   * The service is gone and says so (a crash, a restart): drops every open connection, and each new
   * one as it opens.
   */
  cut(): void {
    this.#mode = 'cut';
    for (const { client, upstream } of this.#links) {
      client.destroy();
      upstream.destroy();
    }
  }

  /**
   * A network partition that drops packets and resets nothing (the host gone dark behind a firewall,
   * a link down): every connection stays open and carries nothing either way, not even an end (a FIN
   * waits with the rest), and a new connection is accepted but gets no bytes. A client waiting for
   * an answer (a reply, a QUIT's OK, the other side's end) waits until `restore()`, which delivers
   * what was held, as TCP's retransmissions do once a partition heals. Unlike a real partition, a
   * new connection's handshake succeeds, as it would through a proxy or load balancer on our side.
   */
  stall(): void {
    this.#mode = 'stalled';
    for (const link of this.#links) hold(link);
  }

  /** Accepts and carries bytes again, on stalled connections too. */
  restore(): void {
    if (this.#mode === 'stalled') for (const link of this.#links) carry(link);
    this.#mode = 'open';
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

function carry({ client, upstream }: Link): void {
  client.pipe(upstream);
  upstream.pipe(client);
}

/** Passes neither side's bytes on: what arrives waits in the sockets' buffers for `carry`. */
function hold({ client, upstream }: Link): void {
  client.unpipe(upstream);
  upstream.unpipe(client);
  client.pause();
  upstream.pause();
}
