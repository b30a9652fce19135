/**
 * FakeDiscord's HTTP plumbing: reading a bounded body, parsing JSON as Discord does (400 with code
 * 50109 otherwise), and answering JSON with extra headers (a 429's rate-limit headers).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { apiError } from './wire.js';

const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Thrown while routing a request; answered with `status` and Discord's error `body`. */
export class HttpError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;

  constructor(status: number, body: Record<string, unknown>) {
    super(String(body.message));
    this.status = status;
    this.body = body;
  }
}

export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function parseJson(raw: string, contentType: string | undefined): unknown {
  if (raw === '') return undefined;
  if (!contentType?.startsWith('application/json')) {
    throw new HttpError(400, apiError(50109, `FakeDiscord accepts JSON bodies only, got ${contentType}`));
  }
  try {
    return JSON.parse(raw);
  } catch {
    throw new HttpError(400, apiError(50109, 'The request body contains invalid JSON.'));
  }
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new Error('request body too large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
