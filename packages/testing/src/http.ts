/**
 * HTTP plumbing the fake servers share: listening on a free port and closing, reading a request
 * body with a bound, and answering JSON.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** 8 MiB: a fake needs no more; a test that sends more is broken. */
const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;

/** The body as text; rejects once it passes `maxBytes`, so a test cannot fill a fake's memory. */
export async function readBody(req: IncomingMessage, maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<string> {
  return (await readBytes(req, maxBytes)).toString('utf8');
}

/** The body as bytes (a protobuf message), bounded as `readBody`'s. */
export async function readBytes(req: IncomingMessage, maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > maxBytes) throw new Error('request body too large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/** Answers `body` as JSON with its length, and any extra headers (a 429's rate-limit headers). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
  contentType = 'application/json',
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Listens on 127.0.0.1, on a free port; rejects if the server cannot. */
export async function listenOnFreePort(server: Server): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Stops listening and ends the connections still open (keep-alive ones too), so `close` returns. */
export async function closeServer(server: Server): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
}
