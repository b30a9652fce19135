import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { RateLimiter, rateLimit } from './rate-limit.js';

const from = (remoteAddress: string, headers: Record<string, string> = {}) =>
  [{ headers }, { incoming: { socket: { remoteAddress } } }] as const;

describe('RateLimiter', () => {
  it('allows a burst, then refills at the per-minute rate', () => {
    let now = 0;
    const limiter = new RateLimiter({ perMinute: 60, burst: 3, now: () => now });
    expect([1, 2, 3].map(() => limiter.take('a').allowed)).toEqual([true, true, true]);
    expect(limiter.take('a')).toEqual({ allowed: false, retryAfterMs: 1_000 });
    // Another client has its own bucket.
    expect(limiter.take('b').allowed).toBe(true);
    now += 999;
    expect(limiter.take('a').allowed).toBe(false);
    now += 1_001;
    expect(limiter.take('a').allowed).toBe(true);
    // A long pause refills to the burst, not beyond.
    now += 3_600_000;
    expect([1, 2, 3, 4].map(() => limiter.take('a').allowed)).toEqual([true, true, true, false]);
  });

  it('peek says what take would, without taking', () => {
    let now = 0;
    const limiter = new RateLimiter({ perMinute: 60, burst: 2, now: () => now });
    expect(limiter.peek('a')).toEqual({ allowed: true });
    limiter.take('a');
    expect([limiter.peek('a'), limiter.peek('a')]).toEqual([{ allowed: true }, { allowed: true }]);
    limiter.take('a');
    expect(limiter.peek('a')).toEqual({ allowed: false, retryAfterMs: 1_000 });
    expect(limiter.take('a')).toEqual({ allowed: false, retryAfterMs: 1_000 });
    now += 1_000;
    expect(limiter.peek('a')).toEqual({ allowed: true });
  });

  it('is off at 0 per minute', () => {
    const limiter = new RateLimiter({ perMinute: 0, burst: 1 });
    expect(Array.from({ length: 100 }, () => limiter.take('a').allowed).every(Boolean)).toBe(true);
  });

  it('forgets the least recently seen clients beyond its bound', () => {
    let now = 0;
    const limiter = new RateLimiter({ perMinute: 1, burst: 1, maxClients: 2, now: () => now });
    limiter.take('a');
    limiter.take('b');
    limiter.take('c'); // drops a
    now += 1;
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('c').allowed).toBe(false);
  });
});

describe('rateLimit middleware', () => {
  function app(perMinute: number, burst: number) {
    const hono = new Hono();
    hono.use('*', rateLimit({ perMinute, burst }));
    hono.get('/', (c) => c.text('ok'));
    return hono;
  }

  it('answers 429 rate_limited with Retry-After in whole seconds', async () => {
    const hono = app(6, 2);
    expect((await hono.request('/', ...from('203.0.113.1'))).status).toBe(200);
    expect((await hono.request('/', ...from('203.0.113.1'))).status).toBe(200);
    const limited = await hono.request('/', ...from('203.0.113.1'));
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('10');
    expect(await limited.json()).toMatchObject({ code: 'rate_limited' });
    expect((await hono.request('/', ...from('203.0.113.2'))).status).toBe(200);
  });

  it('behind a proxy on this host, limits the forwarded client; a remote X-Forwarded-For is ignored', async () => {
    const hono = app(6, 1);
    const viaProxy = (client: string) => from('127.0.0.1', { 'x-forwarded-for': `198.51.100.7, ${client}` });
    expect((await hono.request('/', ...viaProxy('203.0.113.1'))).status).toBe(200);
    expect((await hono.request('/', ...viaProxy('203.0.113.1'))).status).toBe(429);
    expect((await hono.request('/', ...viaProxy('203.0.113.2'))).status).toBe(200);
    // A remote peer cannot pick a fresh bucket for each request.
    const spoof = (client: string) => from('203.0.113.50', { 'x-forwarded-for': client });
    expect((await hono.request('/', ...spoof('1.1.1.1'))).status).toBe(200);
    expect((await hono.request('/', ...spoof('2.2.2.2'))).status).toBe(429);
  });
});
