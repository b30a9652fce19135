/**
 * FakeDiscord's HTTP plumbing: parsing JSON as Discord does (400 with code 50109 otherwise), and
 * answering JSON with extra headers (a 429's rate-limit headers). Bodies are read with `../http.ts`.
 */
import { apiError } from './wire.js';

export { sendJson } from '../http.js';

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
