/**
 * Who a request comes from: the connection's address, and the client a reverse proxy on this host
 * forwarded it for.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';

export function remoteAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined; // not served by @hono/node-server (app.request in tests)
  }
}

export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/**
 * The client a rate limit counts: the connection's address or, behind a reverse proxy on this host
 * (a loopback peer that sends `X-Forwarded-For`), the address the proxy saw, the last one in that
 * header. A remote peer's `X-Forwarded-For` is never believed, since anyone can send one.
 */
export function clientAddress(c: Context): string {
  const peer = remoteAddress(c) ?? 'unknown';
  if (!isLoopback(peer)) return peer;
  const forwarded = c.req.header('x-forwarded-for')?.split(',').at(-1)?.trim();
  return forwarded || peer;
}
