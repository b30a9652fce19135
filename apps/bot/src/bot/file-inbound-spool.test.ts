/**
 * The file spool's own ways of losing what it acknowledged, each on a real file: a torn last line, a
 * removal racing another channel's push, and a restart right after spooling; and of keeping what a
 * take-back must leave nowhere (`scrub`), read back from the bytes of the files. "A restart" is a new
 * `FileInboundSpool` on the same path, as the next process would make.
 */
import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { type SpooledMessage, spooledChange } from '@ebb/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spooledMessage } from '../../test/spooled-message.js';
import { FileInboundSpool } from './file-inbound-spool.js';

let dir: string;
let files = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ebb-file-spool-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const newPath = () => join(dir, `spool-${++files}.jsonl`);

const message = spooledMessage;

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

describe('FileInboundSpool.scrub (a take-back)', () => {
  const C = 'slack:T:C';
  /** Text planted in a message, found in the files only if a copy of it is left. */
  const secret = (what: string) => `${what}-${randomBytes(8).toString('hex')}`;
  const said = (channelKey: string, i: number, text: string): SpooledMessage => ({
    ...message(channelKey, i),
    text,
  });
  const edit = (channelKey: string, id: string, text: string) =>
    spooledChange({
      kind: 'edited',
      platform: 'slack',
      channelKey,
      platformMessageId: id,
      text,
      ts: '2026-11-24T11:00:00.000Z',
    });
  const deletion = (channelKey: string, id: string) =>
    spooledChange({
      kind: 'deleted',
      platform: 'slack',
      channelKey,
      platformMessageIds: [id],
      ts: '2026-11-24T11:00:01.000Z',
    });
  /** Every byte on disk beside the spool: the file, its dead letters, any temp file. */
  async function onDisk(path: string): Promise<string> {
    const names = (await readdir(dir)).filter((name) => name.startsWith(`${basename(path, '.jsonl')}.`));
    const texts = await Promise.all(names.map((name) => readFile(join(dir, name), 'utf8')));
    return texts.join('\n');
  }

  it('leaves no byte of a replayed message or of its pending edit, and keeps the rest pending across a restart', async () => {
    const path = newPath();
    const spool = new FileInboundSpool(path);
    const [text, edited] = [secret('said'), secret('edited')];
    await spool.push(said(C, 1, text));
    await spool.push(message(C, 2));
    await spool.push(edit(C, 'm1', edited));
    await spool.push(deletion(C, 'm1'));
    await spool.push(message('slack:T:D', 3));
    // The replay archived m1 and removed it: its line stays in the file (a removal is appended).
    const [first] = await spool.peek(C, 1);
    await spool.remove(C, [first?.id ?? '']);
    expect(await onDisk(path)).toContain(text);
    expect(await onDisk(path)).toContain(edited);

    expect(await spool.scrub(C, ['m1'])).toBe(2);
    expect(await onDisk(path)).not.toContain(text);
    expect(await onDisk(path)).not.toContain(edited);
    // The deletion holds no text and stays; another message and another channel are untouched.
    const kept = [message(C, 2).platformMessageId, deletion(C, 'm1').platformMessageId];
    expect(await idsOf(spool, C)).toEqual(kept);
    const restarted = new FileInboundSpool(path);
    expect(await idsOf(restarted, C)).toEqual(kept);
    expect(await idsOf(restarted, 'slack:T:D')).toEqual(['m3']);
    expect(await onDisk(path)).not.toContain(text);
  });

  it("takes the message's dead letter out of the dead letters, keeping the others", async () => {
    const path = newPath();
    const spool = new FileInboundSpool(path);
    const text = secret('refused');
    await spool.push(said(C, 1, text));
    await spool.push(message(C, 2));
    await spool.push(message(C, 3));
    const [poison, other] = await spool.peek(C, 2);
    if (!poison || !other) throw new Error('nothing spooled');
    await spool.deadLetter(C, poison, 'db_constraint: refused');
    await spool.deadLetter(C, other, 'db_constraint: refused');
    expect(await readFile(spool.deadLetterPath, 'utf8')).toContain(text);

    // Its line in the spool file and its dead letter.
    expect(await spool.scrub(C, ['m1'])).toBe(2);
    expect(await onDisk(path)).not.toContain(text);
    const dead = (await readFile(spool.deadLetterPath, 'utf8')).trimEnd().split('\n');
    expect(dead.map((line) => JSON.parse(line).message.platformMessageId)).toEqual(['m2']);
    expect(await idsOf(new FileInboundSpool(path), C)).toEqual(['m3']);
  });

  it('drops a pending entry of the message for good, and never gives its id to a later push', async () => {
    const path = newPath();
    const spool = new FileInboundSpool(path);
    const text = secret('pending');
    await spool.push(message(C, 1));
    await spool.push(said(C, 2, text));
    const before = await spool.peek(C, 10);
    expect(await spool.scrub(C, ['m2'])).toBe(1);
    await spool.push(message(C, 3));
    // A replay that read the entries before the scrub removes what it read: never the new push.
    await spool.remove(
      C,
      before.map((e) => e.id),
    );
    expect(await idsOf(spool, C)).toEqual(['m3']);
    expect(await idsOf(new FileInboundSpool(path), C)).toEqual(['m3']);
    expect(await onDisk(path)).not.toContain(text);
  });

  it("keeps another channel's push that lands while the file is written anew", async () => {
    // Each trial pushes at a different point of the scrub, 60 of them.
    const lost: number[] = [];
    for (let trial = 0; trial < 60; trial++) {
      const path = newPath();
      const spool = new FileInboundSpool(path);
      await spool.push(said(C, 1, 'taken back'));
      await spool.push(message('discord:G:A', 0));
      await Promise.all([
        spool.scrub(C, ['m1']),
        ticks(trial % 20).then(() => spool.push(message('discord:G:A', trial + 1))),
      ]);
      const here = await idsOf(spool, 'discord:G:A');
      const afterRestart = await idsOf(new FileInboundSpool(path), 'discord:G:A');
      if (here.length !== 2 || afterRestart.length !== 2 || (await onDisk(path)).includes('taken back')) {
        lost.push(trial);
      }
    }
    expect(lost).toEqual([]);
  });

  it('drops a fragment a crash left in the file, whose text no record accounts for', async () => {
    const path = newPath();
    const text = secret('torn');
    const record = JSON.stringify({ id: 'f2', message: message(C, 2) });
    // An older version glued a whole record to the fragment of a write that never finished.
    await writeFile(path, `{"id":"f1","message":{"channelKey":"${C}","text":"${text}${record}\n`);
    const spool = new FileInboundSpool(path);
    expect(await spool.scrub(C, ['m1'])).toBe(0);
    expect(await onDisk(path)).not.toContain(text);
    expect(await idsOf(new FileInboundSpool(path), C)).toEqual(['m2']);
  });
});
