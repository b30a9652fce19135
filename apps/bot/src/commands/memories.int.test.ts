/**
 * `ebb memories list|forget` against the real Postgres stores: listing by channel (a key or a glob),
 * by speaker and as JSON; forgetting by id, channel and speaker; nothing deleted without `--yes`.
 */
import { tmpdir } from 'node:os';
import type { NewMemory } from '@ebb/core';
import { PgChannelStore, PgMemoryStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { memoriesForget, memoriesList } from './memories.js';

const SLACK = 'slack:T1:C1';
const THREAD = 'slack:T1:C1:1700000000.0001';
const OTHER = 'slack:T1:C2';
const WEB = 'web:w1';

const capture = captureIo;

const memory = (text: string, channelKey: string, speaker?: string): NewMemory => ({
  type: 'fact',
  text,
  importance: 0.5,
  scope: channelKey.startsWith('slack:') ? channelKey.split(':').slice(0, 3).join(':') : channelKey,
  channelKey,
  fromSeq: 1,
  toSeq: 2,
  ...(speaker === undefined ? {} : { speaker }),
});

let pg: FreshSchemaDb;
let memories: PgMemoryStore;

beforeAll(async () => {
  pg = await freshSchemaDb();
  memories = new PgMemoryStore({ db: pg.db });
  // Glob selection looks at the stored channels.
  const channels = new PgChannelStore({ db: pg.db });
  for (const key of [SLACK, THREAD, OTHER, WEB]) {
    await channels.append(key, { role: 'user', author: 'ana', text: 'hi', tokens: 5, contextTokens: 5 });
  }
});
afterAll(async () => {
  await pg?.close();
});
beforeEach(async () => {
  await memories.forget((await memories.list({})).map((m) => m.id));
  await memories.upsert([
    memory('Ana owns the deploy', SLACK, 'ana'),
    memory('Bob prefers tea', SLACK, 'bob'),
    memory('The thread settled on Friday', THREAD, 'ana'),
    memory('Bob is on call this week', OTHER, 'bob'),
    memory('Web visitor likes graphs', WEB),
  ]);
});

// No config.toml where the command looks (built-in defaults: offline, the extractive summarizer).
const deps = () => ({ database: pg.database, env: {}, cwd: tmpdir() });
const texts = async (filter: Parameters<PgMemoryStore['list']>[0] = {}) =>
  (await memories.list(filter)).map((m) => m.text).sort();
const idOf = async (text: string) => {
  const found = (await memories.list({})).find((m) => m.text === text);
  if (!found) throw new Error(`no memory ${text}`);
  return found.id;
};

describe('ebb memories list', () => {
  it('lists every memory as a table', async () => {
    const io = capture();
    expect(await memoriesList({}, io, deps())).toBe(0);
    const lines = io.stdout().split('\n');
    expect(lines[0]).toBe('5 memories');
    expect(lines[1]).toMatch(/^id +type +importance +speaker +scope +text$/);
    expect(lines[2]).toMatch(/^\d+ +fact +0\.50 +ana +slack:T1:C1 +Ana owns the deploy$/);
    expect(lines).toHaveLength(7);
  });

  it('selects by channel key, by channel glob and by speaker', async () => {
    const exact = capture();
    expect(await memoriesList({ channel: SLACK }, exact, deps())).toBe(0);
    expect(exact.stdout()).toContain(`2 memories from ${SLACK}`);
    expect(exact.stdout()).not.toContain('Friday');

    const glob = capture();
    expect(await memoriesList({ channel: `${SLACK}*`, json: true }, glob, deps())).toBe(0);
    const listed = JSON.parse(glob.stdout()).memories;
    expect(listed.map((m: { text: string }) => m.text)).toEqual([
      'Ana owns the deploy',
      'Bob prefers tea',
      'The thread settled on Friday',
    ]);
    expect(Object.keys(listed[0])).toEqual([
      'id',
      'type',
      'text',
      'importance',
      'speaker',
      'scope',
      'fromSeq',
      'toSeq',
    ]);

    const speaker = capture();
    expect(await memoriesList({ speaker: 'bob', json: true }, speaker, deps())).toBe(0);
    expect(JSON.parse(speaker.stdout()).memories.map((m: { text: string }) => m.text)).toEqual([
      'Bob prefers tea',
      'Bob is on call this week',
    ]);

    const both = capture();
    expect(await memoriesList({ channel: 'slack:T1:*', speaker: 'ana', json: true }, both, deps())).toBe(0);
    expect(JSON.parse(both.stdout()).memories.map((m: { speaker: string }) => m.speaker)).toEqual([
      'ana',
      'ana',
    ]);

    const web = capture();
    expect(await memoriesList({ channel: WEB, json: true }, web, deps())).toBe(0);
    expect(JSON.parse(web.stdout()).memories[0]).toMatchObject({ speaker: null, scope: WEB });
  });
});

describe('ebb memories forget', () => {
  it('without --yes prints what it would forget, deletes nothing and exits 2', async () => {
    const before = await texts();
    const byChannel = capture();
    expect(await memoriesForget({ channel: SLACK }, byChannel, deps())).toBe(2);
    expect(byChannel.stdout()).toContain(`would forget 2 memories from ${SLACK}:`);
    expect(byChannel.stdout()).toContain('Bob prefers tea');
    expect(byChannel.stdout()).toContain('Run again with --yes');

    const byId = capture();
    expect(await memoriesForget({ ids: [await idOf('Bob prefers tea')] }, byId, deps())).toBe(2);
    expect(await texts()).toEqual(before);
  });

  it('forgets by id', async () => {
    const id = await idOf('Bob prefers tea');
    const io = capture();
    expect(await memoriesForget({ ids: [id], yes: true }, io, deps())).toBe(0);
    expect(io.stdout()).toContain(`forgot 1 memory with id ${id}:`);
    expect(await texts()).toEqual([
      'Ana owns the deploy',
      'Bob is on call this week',
      'The thread settled on Friday',
      'Web visitor likes graphs',
    ]);
  });

  it('forgets by channel glob: the channel and its threads, nothing else', async () => {
    const io = capture();
    expect(await memoriesForget({ channel: `${SLACK}*`, yes: true }, io, deps())).toBe(0);
    expect(io.stdout()).toContain(`forgot 3 memories from ${SLACK}*:`);
    expect(io.stdout()).toContain('The archived messages are kept');
    expect(await texts()).toEqual(['Bob is on call this week', 'Web visitor likes graphs']);
  });

  it('forgets by speaker across channels', async () => {
    const io = capture();
    expect(await memoriesForget({ speaker: 'bob', yes: true }, io, deps())).toBe(0);
    expect(await texts()).toEqual([
      'Ana owns the deploy',
      'The thread settled on Friday',
      'Web visitor likes graphs',
    ]);
    expect(await texts({ speaker: 'bob' })).toEqual([]);
  });

  it('names ids that match no memory and exits 1', async () => {
    const id = await idOf('Web visitor likes graphs');
    const io = capture();
    expect(await memoriesForget({ ids: [id, '999999'], yes: true }, io, deps())).toBe(1);
    expect(io.stderr()).toBe('ebb memories forget: no memory has id 999999');
    expect(await texts({ channelKey: WEB })).toEqual([]);
  });

  it('refuses to run without a selection, or with --id and another filter', async () => {
    const none = capture();
    expect(await memoriesForget({ yes: true }, none, deps())).toBe(2);
    expect(none.stderr()).toContain('say what to forget');
    const mixed = capture();
    expect(await memoriesForget({ ids: ['1'], speaker: 'bob', yes: true }, mixed, deps())).toBe(2);
    expect(mixed.stderr()).toContain('--id goes alone');
    expect(await texts()).toHaveLength(5);
  });

  it('says so when nothing matches', async () => {
    const io = capture();
    expect(await memoriesForget({ speaker: 'nobody', yes: true }, io, deps())).toBe(0);
    expect(io.stdout()).toBe('nothing to forget: no memories about nobody');
    expect(await texts()).toHaveLength(5);
  });
});
