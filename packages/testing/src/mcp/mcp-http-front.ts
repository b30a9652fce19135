/**
 * A front for an MCP server over streamable HTTP, for tests that must see or change what passes
 * between the client and the server: each request's JSON-RPC message is read, `intercept` may answer
 * it itself, and everything else is forwarded to `upstream`. `onForwarded` hears of a forwarded
 * message once the upstream has answered it with headers: for `tools/call` the tool holds the call by
 * then, since the SDK's transport hands a request to the tool before it sends the response's headers.
 */
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from '../http.js';

/** The fields of a JSON-RPC message a front looks at. */
export interface FrontMessage {
  readonly id?: unknown;
  readonly method?: unknown;
  readonly params?: { readonly name?: unknown };
}

export interface McpHttpFrontOptions {
  /** Answers `message` (true) or lets it through to the upstream (false). */
  readonly intercept?: (message: FrontMessage, req: IncomingMessage, res: ServerResponse) => boolean;
  /** A message forwarded, once the upstream began its answer. */
  readonly onForwarded?: (message: FrontMessage) => void;
}

export class McpHttpFront {
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(upstream: string, options: McpHttpFrontOptions = {}): Promise<McpHttpFront> {
    const server = createServer(async (req, res) => {
      const body = await readBody(req);
      const message = (body === '' ? {} : JSON.parse(body)) as FrontMessage;
      if (options.intercept?.(message, req, res)) return;
      const forwarded = request(upstream, { method: req.method, headers: req.headers }, (answer) => {
        options.onForwarded?.(message);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forwarded.on('error', () => res.destroy());
      res.on('close', () => forwarded.destroy());
      forwarded.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new McpHttpFront(server);
  }

  /** The MCP endpoint to give the client. */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/mcp`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}
