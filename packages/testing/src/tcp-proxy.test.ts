/**
 * The proxy the outage tests put in front of Postgres and Redis, against an echo server: open it
 * carries bytes; cut, every connection ends; what is sent while stalled, on open connections and on
 * one made during the stall, is delivered in order by `restore()`, the connections never dropped.
 * That nothing passes during the stall is what bullmq-compaction-worker.int.test shows (a worker's
 * Redis connection stuck on an unanswered reconnect), since an absence takes a wait to see here.
 */
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { TcpProxy } from './tcp-proxy.js';

let echo: Server;
let proxy: TcpProxy;
const clients: Socket[] = [];

beforeEach(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const address = echo.address();
  proxy = await TcpProxy.start({
    host: '127.0.0.1',
    port: typeof address === 'object' && address ? address.port : 0,
  });
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await proxy.close();
  await new Promise<void>((resolve) => echo.close(() => resolve()));
});

/** A client through the proxy, and what it has received so far. */
async function client(): Promise<{ socket: Socket; received: () => string }> {
  const socket = connect({ port: proxy.port, host: '127.0.0.1' });
  clients.push(socket);
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { socket, received: () => text };
}

it('carries bytes both ways while open', async () => {
  const c = await client();
  c.socket.write('ping');
  await expect.poll(c.received).toBe('ping');
});

it('ends every connection when cut', async () => {
  const c = await client();
  const closed = once(c.socket, 'close');
  proxy.cut();
  await closed;
  expect(c.socket.destroyed).toBe(true);
});

it('holds what is sent while stalled and delivers it in order on restore', async () => {
  const before = await client();
  before.socket.write('a');
  await expect.poll(before.received).toBe('a');

  proxy.stall();
  before.socket.write('b');
  before.socket.write('c');
  // Accepted during the stall: its bytes wait too.
  const during = await client();
  during.socket.write('x');

  proxy.restore();
  await expect.poll(before.received).toBe('abc');
  await expect.poll(during.received).toBe('x');
  expect(before.socket.destroyed).toBe(false);
});
