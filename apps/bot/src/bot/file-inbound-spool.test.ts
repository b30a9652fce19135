/**
 * The file spool's own ways of losing what it acknowledged, each on a real file: a torn last line, a
 * removal racing another channel's push, and a restart right after spooling. "A restart" is a new
 * `FileInboundSpool` on the same path, as the next process would make.
 */
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SpooledMessage } from '@ebb/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileInboundSpool } from './file-inbound-spool.js';

let dir: string;
let files = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ebb-file-spool-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const newPath = () => join(dir, `spool-${++files}.jsonl`);

const message = (channelKey: string, i: number): SpooledMessage => ({
  channelKey,
  role: 'user',
  author: 'ana',
  text: `update ${i}`,
  ts: new Date(Date.UTC(2026, 10, 24, 10, 0, 0, i)).toISOString(),
  platformMessageId: `m${i}`,
});

const idsOf = async (spool: FileInboundSpool, channelKey: string) =>
  (await spool.peek(channelKey, 10_000)).map((e) => e.message.platformMessageId);

/** Resolves after `n` turns of the event loop (I/O callbacks included). */
async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('FileInboundSpool', () => {
  it('keeps the message pushed after a torn last line (a crash mid-write), and after the next restart', async () => {
    const path = newPath();
    await new FileInboundSpool(path).push(message('slack:T:C', 1));
    // The process died in the middle of writing the next line: no newline at the end.
    await appendFile(path, '{"id":"f2","message":{"channelKey":"slack:T:C","ro');

    const restarted = new FileInboundSpool(path);
    await restarted.push(message('slack:T:C', 3));
    expect(await idsOf(restarted, 'slack:T:C')).toEqual(['m1', 'm3']);
    expect(await idsOf(new FileInboundSpool(path), 'slack:T:C')).toEqual(['m1', 'm3']);
  });

  it('gives back a record an older version appended to a torn line', async () => {
    const path = newPath();
    const record = JSON.stringify({ id: 'f1732000000002', message: message('slack:T:C', 2) });
    await writeFile(path, `{"id":"f1732000000001","message":{"chann${record}\n`);
    expect(await idsOf(new FileInboundSpool(path), 'slack:T:C')).toEqual(['m2']);
  });

  it("never lets emptying one channel take another channel's push with it", async () => {
    // The removal of a channel's last entry empties the file; a push to another channel lands
    // somewhere in that removal. Each trial pushes at a different point, 200 of them.
    const lost: number[] = [];
    for (let trial = 0; trial < 200; trial++) {
      const path = newPath();
      const spool = new FileInboundSpool(path);
      await spool.push(message('discord:G:A', 0));
      const [entry] = await spool.peek('discord:G:A', 1);
      await Promise.all([
        spool.remove('discord:G:A', [entry?.id ?? '']),
        ticks(trial % 20).then(() => spool.push(message('discord:G:B', trial))),
      ]);
      // Kept both in this process and in the file the next process reads.
      const here = await idsOf(spool, 'discord:G:B');
      const afterRestart = await idsOf(new FileInboundSpool(path), 'discord:G:B');
      if (here.length !== 1 || afterRestart.length !== 1) lost.push(trial);
    }
    expect(lost).toEqual([]);
  });

  it('keeps every entry when the process restarts right after spooling', async () => {
    const path = newPath();
    const first = new FileInboundSpool(path);
    for (let i = 0; i < 200; i++) await first.push(message('slack:T:C', i));
    const second = new FileInboundSpool(path);
    for (let i = 200; i < 250; i++) await second.push(message('slack:T:C', i));

    const expected = Array.from({ length: 250 }, (_, i) => `m${i}`);
    expect(await idsOf(second, 'slack:T:C')).toEqual(expected);
    const entries = await new FileInboundSpool(path).peek('slack:T:C', 10_000);
    expect(entries.map((e) => e.message.platformMessageId)).toEqual(expected);
    expect(new Set(entries.map((e) => e.id)).size).toBe(250);
  });

  it('empties the file once nothing is pending, and starts again cleanly after it', async () => {
    const path = newPath();
    const spool = new FileInboundSpool(path);
    await spool.push(message('web:x', 1));
    await spool.push(message('web:y', 2));
    const [x] = await spool.peek('web:x', 1);
    await spool.remove('web:x', [x?.id ?? '']);
    expect(await readFile(path, 'utf8')).not.toBe('');
    const [y] = await spool.peek('web:y', 1);
    await spool.remove('web:y', [y?.id ?? '']);
    expect(await readFile(path, 'utf8')).toBe('');
    await spool.push(message('web:x', 3));
    expect(await idsOf(new FileInboundSpool(path), 'web:x')).toEqual(['m3']);
  });
});
