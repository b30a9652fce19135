/**
 * The fake MCP server over streamable HTTP on 127.0.0.1, in the test's process (stateless: a fresh
 * SDK server and transport per request, as the SDK's stateless example does). `crash` (the tool or
 * the method) closes the listener and drops every connection; `restart` listens again on the same
 * port. Every request's headers are recorded, so a test can check what the client sent.
 *
 *   const mcp = await FakeMcpHttpServer.start({ lookup: { ana: '…' } });
 *   `[mcp.servers.dir]\nurl = "${mcp.url}"`
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { readBody } from '../http.js';
import { createFakeMcpServer, type FakeMcpOptions } from './fake-mcp-tools.js';

const MAX_BODY_BYTES = 1024 * 1024;

export class FakeMcpHttpServer {
  readonly #options: FakeMcpOptions;
  readonly #port: number;
  #server: Server;
  readonly #headers: IncomingHttpHeaders[] = [];

  private constructor(server: Server, options: FakeMcpOptions) {
    this.#server = server;
    this.#options = options;
    this.#port = (server.address() as AddressInfo).port;
  }

  static async start(options: FakeMcpOptions = {}, port = 0): Promise<FakeMcpHttpServer> {
    let fake: FakeMcpHttpServer | undefined;
    // Requests cannot arrive before listen() resolves, so the fake exists by then.
    const server = await listen(port, (req, res) => (fake ? fake.#handle(req, res) : res.destroy()));
    fake = new FakeMcpHttpServer(server, options);
    return fake;
  }

  /** The MCP endpoint: `http://127.0.0.1:PORT/mcp`. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}/mcp`;
  }

  /** The headers of every request so far, oldest first. */
  get requestHeaders(): readonly IncomingHttpHeaders[] {
    return this.#headers;
  }

  /** Stops answering: the listener closes and open connections are cut. */
  async crash(): Promise<void> {
    const server = this.#server;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** Listens again on the same port after `crash`. */
  async restart(): Promise<void> {
    this.#server = await listen(this.#port, (...args) => this.#handle(...args));
  }

  close(): Promise<void> {
    return this.crash();
  }

  async #handle(...[req, res]: Parameters<Handler>): Promise<void> {
    this.#headers.push(req.headers);
    const body =
      req.method === 'POST' ? JSON.parse((await readBody(req, MAX_BODY_BYTES)) || 'null') : undefined;
    const server = createFakeMcpServer(this.#options, () => void this.crash());
    const transport = new StreamableHTTPServerTransport({}); // no session ids: stateless;
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }
}

type Handler = Parameters<typeof createServer>[1] & {};

function listen(port: number, handle: Handler): Promise<Server> {
  const server = createServer((req, res) => {
    Promise.resolve(handle(req, res)).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
