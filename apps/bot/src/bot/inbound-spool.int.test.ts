/** The inbound spools, one contract: Redis, the local file, and Redis with the file behind it. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type InboundSpool,
  isSpooledChange,
  type SpooledItem,
  type SpooledMessage,
  spooledChange,
} from '@ebb/core';
import { createRedis, RedisInboundSpool, waitForReady } from '@ebb/queue';
import { cleanupPrefix, DisposableRedis, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FallbackInboundSpool } from './fallback-inbound-spool.js';
import { FileInboundSpool } from './file-inbound-spool.js';

const redis = createRedis(redisUrl(), { role: 'producer' });
const prefixes: string[] = [];
let dir: string;
beforeAll(async () => {
  await waitForReady(redis);
  dir = await mkdtemp(join(tmpdir(), 'ebb-spool-'));
});
afterAll(async () => {
  for (const prefix of prefixes) await cleanupPrefix(redis, prefix);
  await redis.quit();
  await rm(dir, { recursive: true, force: true });
});

const message = (channelKey: string, i: number): SpooledMessage => ({
  channelKey,
  role: 'user',
  author: 'ana',
  text: `update ${i}: ünïcode and "quotes"\nand lines`,
  ts: `2026-11-24T10:00:${String(i).padStart(2, '0')}.000Z`,
  platformMessageId: `m${i}`,
});

function redisSpool(connection = redis): InboundSpool {
  const prefix = randomPrefix();
  prefixes.push(prefix);
  return new RedisInboundSpool({ connection, prefix });
}
let files = 0;
const fileSpool = () => new FileInboundSpool(join(dir, `spool-${++files}.jsonl`));

/** Resolves after `n` turns of the event loop (I/O callbacks included). */
async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** `copies`: how many stores keep each entry (a scrub counts each store's record). */
describe.each([
  ['Redis', redisSpool, 1],
  ['a local file', fileSpool, 1],
  ['Redis with a file behind it', () => new FallbackInboundSpool(redisSpool(), fileSpool()), 2],
])('InboundSpool on %s', (_name, make, copies) => {
  it('keeps deletions and edits in order with the messages, and reads entries spooled before changes were', async () => {
    const spool = make();
    const key = 'slack:T:C';
    const deleted = spooledChange({
      kind: 'deleted',
      platform: 'slack',
      channelKey: key,
      platformMessageIds: ['m1'],
      ts: '2026-11-24T10:00:02.000Z',
    });
    const edited = spooledChange({
      kind: 'edited',
      platform: 'slack',
      channelKey: key,
      platformMessageId: 'm3',
      text: 'fixed',
      ts: '2026-11-24T10:00:04.000Z',
    });
    await spool.push(message(key, 1));
    await spool.push(deleted);
    await spool.push(message(key, 3));
    await spool.push(edited);
    const entries = await spool.peek(key, 10);
    expect(entries.map((e) => e.message)).toEqual([message(key, 1), deleted, message(key, 3), edited]);
    // An entry as versions before changes wrote it has no `change`: a message.
    expect(entries.map((e) => isSpooledChange(e.message))).toEqual([false, true, false, true]);
  });

  it('keeps each channel in arrival order until removed, and lists the channels that have messages', async () => {
    const spool = make();
    for (let i = 0; i < 3; i++) await spool.push(message('discord:G:A', i));
    await spool.push(message('slack:T:B', 9));
    expect([...(await spool.channels())].sort()).toEqual(['discord:G:A', 'slack:T:B']);
    const first = await spool.peek('discord:G:A', 2);
    expect(first.map((e) => e.message)).toEqual([message('discord:G:A', 0), message('discord:G:A', 1)]);
    await spool.remove(
      'discord:G:A',
      first.map((e) => e.id),
    );
    expect((await spool.peek('discord:G:A', 10)).map((e) => e.message.platformMessageId)).toEqual(['m2']);
    const [last] = await spool.peek('discord:G:A', 10);
    await spool.remove('discord:G:A', [last?.id ?? '']);
    expect(await spool.channels()).toEqual(['slack:T:B']);
    expect(await spool.peek('discord:G:A', 10)).toEqual([]);
  });

  it("keeps a push that lands while a removal empties the channel's spool, and keeps it listed", async () => {
    // Each trial pushes at a different point of the removal of the channel's last entry.
    const spool = make();
    const dropped: number[] = [];
    for (let trial = 0; trial < 100; trial++) {
      await spool.push(message('slack:T:C', 0));
      const [first] = await spool.peek('slack:T:C', 1);
      await Promise.all([
        spool.remove('slack:T:C', [first?.id ?? '']),
        ticks(trial % 20).then(() => spool.push(message('slack:T:C', trial + 1))),
      ]);
      const left = await spool.peek('slack:T:C', 10);
      const listed = (await spool.channels()).includes('slack:T:C');
      if (!listed || left.length !== 1) dropped.push(trial);
      await spool.remove(
        'slack:T:C',
        left.map((e) => e.id),
      );
    }
    expect(dropped).toEqual([]);
  });

  it('scrubs a taken-back message and its edits, one spooled under its channel when the thread was unknown, and keeps the rest', async () => {
    const spool = make();
    const thread = 'slack:T:C:1732000000.000100';
    const edit = (channelKey: string, unknown: boolean) =>
      spooledChange({
        kind: 'edited',
        platform: 'slack',
        channelKey,
        platformMessageId: 'm1',
        text: 'a new text, taken back too',
        ts: '2026-11-24T10:00:05.000Z',
        ...(unknown ? { threadUnknown: true as const } : {}),
      });
    const deleted = spooledChange({
      kind: 'deleted',
      platform: 'slack',
      channelKey: thread,
      platformMessageIds: ['m1'],
      ts: '2026-11-24T10:00:06.000Z',
    });
    await spool.push(message(thread, 1));
    await spool.push(message(thread, 2));
    await spool.push(edit(thread, false));
    await spool.push(edit('slack:T:C', true));
    await spool.push(deleted);
    // The same platform id in another channel, and an edit there that names its thread: not these.
    await spool.push(message('slack:T:D', 1));
    await spool.push(edit('slack:T:C', false));

    expect(await spool.scrub(thread, ['m1'])).toBe(3 * copies);
    expect(await spool.scrub(thread, [])).toBe(0);
    const ids = async (key: string) => (await spool.peek(key, 10)).map((e) => e.message.platformMessageId);
    expect(await ids(thread)).toEqual(['m2', deleted.platformMessageId]);
    expect(await ids('slack:T:D')).toEqual(['m1']);
    expect(await ids('slack:T:C')).toEqual([edit('slack:T:C', false).platformMessageId]);
    expect([...(await spool.channels())].sort()).toEqual(['slack:T:C', 'slack:T:D', thread].sort());
  });

  it('moves an entry aside to its dead letters, out of the channel', async () => {
    const spool = make();
    await spool.push(message('discord:G:A', 1));
    await spool.push(message('discord:G:A', 2));
    const [poison] = await spool.peek('discord:G:A', 1);
    if (!poison) throw new Error('nothing spooled');
    const where = await spool.deadLetter('discord:G:A', poison, 'db_constraint: refused');
    expect(where).toMatch(/dead/);
    expect((await spool.peek('discord:G:A', 10)).map((e) => e.message.platformMessageId)).toEqual(['m2']);
    const [last] = await spool.peek('discord:G:A', 1);
    await spool.remove('discord:G:A', [last?.id ?? '']);
    expect(await spool.channels()).toEqual([]);
  });
});

describe('the file behind Redis', () => {
  it('takes what Redis cannot, and replays both in the order the messages were sent', async () => {
    const down = createRedis('redis://127.0.0.1:1', { role: 'producer' });
    const path = join(dir, 'fallback.jsonl');
    const local = new FileInboundSpool(path);
    const up = redisSpool();
    await up.push(message('web:x', 1));
    await up.push(message('web:x', 3));
    // Redis gone: message 2 (sent between them, delivered late) goes to the file.
    await new FallbackInboundSpool(new RedisInboundSpool({ connection: down }), local).push(
      message('web:x', 2),
    );
    down.disconnect();
    expect(await readFile(path, 'utf8')).toContain('"platformMessageId":"m2"');

    const spool = new FallbackInboundSpool(up, local);
    const all = await spool.peek('web:x', 10);
    expect(all.map((e) => e.message.platformMessageId)).toEqual(['m1', 'm2', 'm3']);
    await spool.remove(
      'web:x',
      all.map((e) => e.id),
    );
    expect(await spool.channels()).toEqual([]);
    // Emptied once nothing is left: the file holds one outage at most.
    expect(await readFile(path, 'utf8')).toBe('');
  });
});

describe('the file behind Redis, after a take-back', () => {
  const secret = () => `taken-back-${randomBytes(8).toString('hex')}`;
  /**
   * A Redis of this test's own, its `DUMP` uncompressed (`rdbcompression no`: LZF could split the
   * planted text and hide a copy), so what it keeps can be read back byte for byte.
   */
  let server: DisposableRedis;
  let own: Redis;
  beforeAll(async () => {
    server = await DisposableRedis.start();
    own = createRedis(server.url, { role: 'producer' });
    await waitForReady(own);
    await own.config('SET', 'rdbcompression', 'no');
  });
  afterAll(async () => {
    await own?.quit();
    await server?.kill();
  });
  /** Every key Redis holds as `DUMP` writes it (an entry `XDEL` only marked deleted included). */
  async function inRedis(): Promise<string> {
    const dumps: Buffer[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await own.scan(cursor, 'COUNT', 500);
      cursor = next;
      for (const key of keys) dumps.push((await own.dumpBuffer(key)) ?? Buffer.alloc(0));
    } while (cursor !== '0');
    return Buffer.concat(dumps).toString('latin1');
  }

  it('leaves no copy of a replayed message in the file or in Redis, and the rest replays after a restart', async () => {
    const path = join(dir, `scrubbed-${++files}.jsonl`);
    const prefix = randomPrefix();
    const open = () =>
      new FallbackInboundSpool(
        new RedisInboundSpool({ connection: own, prefix }),
        new FileInboundSpool(path),
      );
    const spool = open();
    const text = secret();
    await spool.push({ ...message('slack:T:C', 1), text });
    await spool.push(message('slack:T:C', 2));
    await spool.push(message('slack:T:D', 3));
    const [first] = await spool.peek('slack:T:C', 1);
    await spool.remove('slack:T:C', [first?.id ?? '']);
    // Both copies are removed, and both stay behind: a removed line, an entry marked deleted.
    expect(await readFile(path, 'utf8')).toContain(text);
    expect(await inRedis()).toContain(text);

    // The file's removed line is a record; Redis's deleted entry is none.
    expect(await spool.scrub('slack:T:C', ['m1'])).toBe(1);
    expect(await readFile(path, 'utf8')).not.toContain(text);
    expect(await inRedis()).not.toContain(text);
    const restarted = open();
    expect((await restarted.peek('slack:T:C', 10)).map((e) => e.message)).toEqual([message('slack:T:C', 2)]);
    expect((await restarted.peek('slack:T:D', 10)).map((e) => e.message)).toEqual([message('slack:T:D', 3)]);
  });

  it('fails while Redis cannot be reached (its copy may be there), and scrubs the file all the same', async () => {
    const down = createRedis('redis://127.0.0.1:1', { role: 'producer' });
    const path = join(dir, `scrubbed-${++files}.jsonl`);
    const local = new FileInboundSpool(path);
    const spool = new FallbackInboundSpool(new RedisInboundSpool({ connection: down }), local);
    try {
      const text = secret();
      await spool.push({ ...message('web:x', 1), text });
      await spool.push(message('web:x', 2));
      expect(await readFile(path, 'utf8')).toContain(text);
      await expect(spool.scrub('web:x', ['m1'])).rejects.toThrow(/not reachable/);
      expect(await readFile(path, 'utf8')).not.toContain(text);
      expect((await local.peek('web:x', 10)).map((e) => e.message.platformMessageId)).toEqual(['m2']);
    } finally {
      down.disconnect();
    }
  });
});

describe('the file behind Redis, when the disk is broken', () => {
  it("replays Redis's entries when the file cannot be read, rather than hold the channel back", async () => {
    // A directory where the file should be: reading it fails, and so does writing it.
    const broken = await mkdtemp(join(dir, 'a-directory-'));
    const spool = new FallbackInboundSpool(redisSpool(), new FileInboundSpool(broken));
    await spool.push(message('slack:T:C', 1));
    await spool.push(message('slack:T:C', 2));
    const all = await spool.peek('slack:T:C', 10);
    expect(all.map((e) => e.message.platformMessageId)).toEqual(['m1', 'm2']);
    expect(await spool.channels()).toEqual(['slack:T:C']);
    await spool.remove(
      'slack:T:C',
      all.map((e) => e.id),
    );
    expect(await spool.channels()).toEqual([]);
  });
});

describe('the file behind Redis, when Redis goes away', () => {
  /** Redis through a proxy the test cuts (the data stays), and a file; what a replica sees. */
  async function behindProxy() {
    const proxy = await TcpProxy.start({
      host: new URL(redisUrl()).hostname,
      port: Number(new URL(redisUrl()).port || 6379),
    });
    const connection = createRedis(`redis://127.0.0.1:${proxy.port}`, { role: 'producer' });
    await waitForReady(connection);
    const prefix = randomPrefix();
    prefixes.push(prefix);
    const shared = new RedisInboundSpool({ connection, prefix });
    const path = join(dir, `behind-proxy-${++files}.jsonl`);
    return {
      proxy,
      connection,
      prefix,
      path,
      spool: new FallbackInboundSpool(shared, new FileInboundSpool(path)),
      async close() {
        connection.disconnect();
        await proxy.close();
      },
    };
  }
  const ids = (entries: readonly { message: SpooledItem }[]) =>
    entries.map((e) => e.message.platformMessageId);

  it('replays what it spooled before Redis went away ahead of what came after, from the file alone', async () => {
    const { proxy, connection, spool, close } = await behindProxy();
    try {
      await spool.push(message('slack:T:C', 1));
      await spool.push(message('slack:T:C', 2));
      proxy.cut();
      await vi.waitFor(() => expect(connection.status).not.toBe('ready'));
      for (const i of [3, 4, 5]) await spool.push(message('slack:T:C', i));
      // Redis cannot be read: that is not "nothing in Redis".
      const all = await spool.peek('slack:T:C', 10);
      expect(ids(all)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
      expect(await spool.channels()).toEqual(['slack:T:C']);
      await spool.remove(
        'slack:T:C',
        all.map((e) => e.id),
      );
      // Redis back with its copies of m1 and m2: they come back once more (the archive skips them).
      proxy.restore();
      await vi.waitFor(async () => expect(ids(await spool.peek('slack:T:C', 10))).toEqual(['m1', 'm2']), {
        timeout: 10_000,
      });
    } finally {
      await close();
    }
  });

  it('loses nothing when Redis comes back empty (a restart without persistence)', async () => {
    const { proxy, connection, prefix, path, spool, close } = await behindProxy();
    try {
      await spool.push(message('slack:T:C', 1));
      await spool.push(message('slack:T:C', 2));
      proxy.cut();
      await vi.waitFor(() => expect(connection.status).not.toBe('ready'));
      await spool.push(message('slack:T:C', 3));
      proxy.restore();
      await waitForReady(connection, 10_000);
      await cleanupPrefix(connection, prefix);
      const restarted = new FallbackInboundSpool(
        new RedisInboundSpool({ connection, prefix }),
        new FileInboundSpool(path),
      );
      expect(ids(await restarted.peek('slack:T:C', 10))).toEqual(['m1', 'm2', 'm3']);
      expect(await restarted.channels()).toEqual(['slack:T:C']);
    } finally {
      await close();
    }
  });

  it('holds a channel back while Redis alone has one of its messages (the disk refused it) and cannot be read', async () => {
    const { proxy, connection, prefix, close } = await behindProxy();
    // A path under a regular file: every write to it fails, as on a full or read-only disk.
    const notADirectory = join(dir, `not-a-directory-${++files}`);
    await writeFile(notADirectory, '');
    const spool = new FallbackInboundSpool(
      new RedisInboundSpool({ connection, prefix }),
      new FileInboundSpool(join(notADirectory, 'spool.jsonl')),
    );
    try {
      await spool.push(message('slack:T:C', 1));
      proxy.cut();
      await vi.waitFor(() => expect(connection.status).not.toBe('ready'));
      await expect(spool.peek('slack:T:C', 10)).rejects.toThrow(/not reachable/);
      await expect(spool.push(message('slack:T:C', 2))).rejects.toThrow();
      proxy.restore();
      await waitForReady(connection, 10_000);
      expect(ids(await spool.peek('slack:T:C', 10))).toEqual(['m1']);
    } finally {
      await close();
    }
  });
});
