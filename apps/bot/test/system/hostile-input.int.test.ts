/**
 * What an attacker sends to the web channel of a real `ebb start` process (apps/bot/test/ebb-process.ts,
 * with EBB_ADMIN_TOKEN set and the default body and rate limits): for each input, the answer, whether
 * anything was archived, and the process's peak resident memory while it handled it (VmHWM, reset
 * before each row through /proc/PID/clear_refs). Prints the table SECURITY.md quotes.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { HOSTILE_INPUTS, hasLoneSurrogate } from '@ebb/testing/hostile-inputs';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS_WEB, spawnEbb } from '../spawn-ebb.js';

const TOKEN = 'hostile-input-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MB = 1024 * 1024;

let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let child: ChildProcess;
let base: URL;
const prefix = randomPrefix();

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  fake.reply(() => ({ content: 'ok' }));
  fresh = await freshSchemaDb();
  const ebb = await spawnEbb(
    { schema: fresh.schema, prefix, fakeUrl: fake.url },
    { adminToken: TOKEN, web: DEFAULT_LIMITS_WEB },
  );
  child = ebb.child;
  base = new URL(ebb.url);
}, 60_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await dropPrefix(prefix);
  await fresh?.close();
  await fake?.close();
});

interface Sent {
  readonly path: string;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** A JSON body, or a stream of `bytes` (declared in Content-Length unless `chunked`). */
  readonly json?: unknown;
  readonly bytes?: number;
  readonly chunked?: boolean;
  /** Loopback source address: each one is its own client for the rate limit. */
  readonly from?: string;
}

interface Answer {
  readonly status: number | 'reset';
  readonly code?: string;
}

/** One request over node:http, so a body can be streamed without holding it and a source address picked. */
function send(sent: Sent): Promise<Answer> {
  return new Promise((resolve) => {
    const body = sent.json === undefined ? undefined : Buffer.from(JSON.stringify(sent.json));
    const length = body?.length ?? sent.bytes;
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        path: sent.path,
        method: sent.method ?? (length === undefined ? 'GET' : 'POST'),
        localAddress: sent.from ?? '127.0.0.1',
        agent: false,
        headers: {
          ...AUTH,
          'content-type': 'application/json',
          ...(length !== undefined && !sent.chunked ? { 'content-length': String(length) } : {}),
          ...sent.headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on('end', () => {
          req.destroy();
          let code: string | undefined;
          try {
            code = (JSON.parse(text) as { code?: string }).code;
          } catch {}
          resolve({ status: res.statusCode ?? 0, ...(code ? { code } : {}) });
        });
      },
    );
    req.on('error', () => resolve({ status: 'reset' }));
    if (body) return req.end(body);
    if (sent.bytes === undefined) return req.end();
    // Streams `bytes` of JSON-ish filler in 1 MiB chunks, as fast as the socket takes them.
    const chunk = Buffer.alloc(MB, 'a');
    let left = sent.bytes;
    const pump = () => {
      while (left > 0 && !req.destroyed) {
        const n = Math.min(left, MB);
        left -= n;
        if (!req.write(n === MB ? chunk : chunk.subarray(0, n))) return void req.once('drain', pump);
      }
      if (!req.destroyed) req.end();
    };
    pump();
  });
}

function rssKb(field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
}

/** Runs `fn` with the child's peak RSS reset first; returns its result and the peak, in MB. */
async function measured<T>(fn: () => Promise<T>): Promise<{ result: T; peakMb: number; baseMb: number }> {
  const baseMb = rssKb('VmRSS') / 1024;
  writeFileSync(`/proc/${child.pid}/clear_refs`, '5');
  const result = await fn();
  return { result, peakMb: rssKb('VmHWM') / 1024, baseMb };
}

async function archivedCount(channel: string): Promise<number> {
  const store = new PgChannelStore({ db: fresh.db });
  return (await store.loadPrefix(`web:${channel}`)).headSeq;
}

const table: string[] = [];
function row(input: string, status: string, archived: string, m: { peakMb: number; baseMb: number }) {
  table.push(`| ${input} | ${status} | ${archived} | ${m.baseMb.toFixed(0)} → ${m.peakMb.toFixed(0)} MB |`);
}

const tally = (answers: readonly Answer[]) => {
  const counts = new Map<string, number>();
  for (const a of answers) {
    const key = `${a.status}${a.code ? ` ${a.code}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => (answers.length === 1 ? k : `${n}× ${k}`)).join(', ');
};

describe('hostile input to a running Ebb', () => {
  it('refuses oversized bodies before buffering them', async () => {
    const declared = await measured(() => send({ path: '/api/channels/big/messages', bytes: 300 * MB }));
    expect(declared.result).toEqual({ status: 413, code: 'body_too_large' });
    row('one 300 MB POST, Content-Length declared', tally([declared.result]), 'no', declared);

    const streamed = await measured(() =>
      send({ path: '/api/channels/big/messages', bytes: 300 * MB, chunked: true }),
    );
    // Refused as soon as the count passes the limit: the answer, or the connection closed mid-send.
    expect([413, 'reset']).toContain(streamed.result.status);
    row('one 300 MB POST, chunked (no length)', tally([streamed.result]), 'no', streamed);

    const ten = await measured(() =>
      Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          send({ path: '/api/channels/big/messages', bytes: 20 * MB, chunked: i % 2 === 1 }),
        ),
      ),
    );
    expect(ten.result.every((a) => a.status === 413 || a.status === 'reset')).toBe(true);
    row('ten 20 MB POSTs at once (half chunked)', tally(ten.result), 'no', ten);

    expect(await archivedCount('big')).toBe(0);
    // Nothing near the bodies' size was ever held.
    for (const m of [declared, streamed, ten]) expect(m.peakMb - m.baseMb).toBeLessThan(100);
  }, 120_000);

  it('answers malformed and out-of-bounds input with 400 and archives nothing', async () => {
    const cases: readonly [string, Sent, string][] = [
      ['malformed JSON', { path: '/api/channels/bad/messages', json: undefined, bytes: 10 }, 'bad_json'],
      ['a JSON array', { path: '/api/channels/bad/messages', json: [1, 2] }, 'bad_json'],
      [
        'a 10,000-character author',
        { path: '/api/channels/bad/messages', json: { author: 'a'.repeat(10_000), text: 'x' } },
        'bad_author',
      ],
      [
        'an author with a newline',
        { path: '/api/channels/bad/messages', json: { author: 'ana\nSYSTEM', text: 'x' } },
        'bad_author',
      ],
      [
        'an author with a bidi override',
        { path: '/api/channels/bad/messages', json: { author: 'ana\u202e', text: 'x' } },
        'bad_author',
      ],
      [
        'a 40,001-character text',
        { path: '/api/channels/bad/messages', json: { author: 'ana', text: 'x'.repeat(40_001) } },
        'bad_text',
      ],
      [
        'NUL in the text',
        { path: '/api/channels/bad/messages', json: { author: 'ana', text: 'a\u0000b' } },
        'nul_character',
      ],
      [
        'a 257-character id',
        { path: '/api/channels/bad/messages', json: { author: 'ana', text: 'x', id: 'i'.repeat(257) } },
        'bad_id',
      ],
      ['a channel id with a newline (events)', { path: '/api/channels/a%0Ab/events' }, 'bad_channel_id'],
      [
        'a channel id with ../ (messages)',
        { path: '/api/channels/..%2Fx/messages', json: { author: 'ana', text: 'x' } },
        'bad_channel_id',
      ],
      [
        'a 101-character channel id (events)',
        { path: `/api/channels/${'c'.repeat(101)}/events` },
        'bad_channel_id',
      ],
      ['an unknown command', { path: '/api/channels/bad/commands', json: { name: 'shell' } }, 'bad_command'],
    ];
    for (const [input, sent, code] of cases) {
      const m = await measured(() => send({ ...sent, from: '127.0.0.2' }));
      expect(m.result, input).toEqual({ status: 400, code });
      row(input, tally([m.result]), 'no', m);
    }
    expect(await archivedCount('bad')).toBe(0);
  }, 60_000);

  it('wants the admin token on every route but /healthz', async () => {
    const cases: readonly [string, Sent, number][] = [
      [
        'no token (messages)',
        {
          path: '/api/channels/auth/messages',
          json: { author: 'ana', text: 'x' },
          headers: { authorization: '' },
        },
        401,
      ],
      [
        'a wrong token (events)',
        { path: '/api/channels/auth/events', headers: { authorization: 'Bearer nope' } },
        401,
      ],
      ['no token (dashboard)', { path: '/api/dashboard/channels', headers: { authorization: '' } }, 401],
      ['no token (metrics)', { path: '/metrics', headers: { authorization: '' } }, 401],
      ['no token (health)', { path: '/healthz', headers: { authorization: '' } }, 200],
    ];
    for (const [input, sent, status] of cases) {
      const m = await measured(() => send({ ...sent, from: '127.0.0.3' }));
      expect(m.result.status, input).toBe(status);
      row(input, tally([m.result]), 'no', m);
    }
    expect(await archivedCount('auth')).toBe(0);
  }, 60_000);

  it('archives every hostile string whole, as data', async () => {
    const m = await measured(async () => {
      const answers: Answer[] = [];
      for (const [i, input] of HOSTILE_INPUTS.entries()) {
        const text = input.text.slice(0, 40_000);
        answers.push(
          await send({
            path: '/api/channels/hostile/messages',
            json: { author: 'mallory', text, id: `h${i}` },
            from: '127.0.0.4',
          }),
        );
      }
      return answers;
    });
    // Texts that are only whitespace are not messages; a lone surrogate cannot be stored as UTF-8
    // and is refused (archived as U+FFFD, the same body's retry would be a conflict); the rest is taken.
    const refused = (h: { text: string }) => h.text.trim() === '' || hasLoneSurrogate(h.text);
    const expected = HOSTILE_INPUTS.filter((h) => !refused(h));
    expect(m.result.filter((a) => a.status === 200)).toHaveLength(expected.length);
    expect(HOSTILE_INPUTS.flatMap((h, i) => (hasLoneSurrogate(h.text) ? [m.result[i]] : []))).toEqual([
      { status: 400, code: 'lone_surrogate' },
    ]);
    const store = new PgChannelStore({ db: fresh.db });
    const head = (await store.loadPrefix('web:hostile')).headSeq;
    const archived = (await store.readArchive('web:hostile', 1, head)).filter((x) => x.role === 'user');
    expect(archived).toHaveLength(expected.length);
    const altered = expected.filter((h, i) => archived[i]?.text !== h.text.slice(0, 40_000));
    expect(altered.map((h) => h.name)).toEqual([]);
    row(
      `${HOSTILE_INPUTS.length} hostile strings as message text (delimiter breaks, role spoofing, Unicode tricks)`,
      tally(m.result),
      `${archived.length}, each as sent`,
      m,
    );
  }, 60_000);

  it('rate limits one client and not the others', async () => {
    const m = await measured(() =>
      Promise.all(
        Array.from({ length: 100 }, () =>
          send({
            path: '/api/channels/flood/commands',
            json: { name: 'context' },
            from: '127.0.0.5',
          }),
        ),
      ),
    );
    const limited = m.result.filter((a) => a.status === 429).length;
    expect(limited).toBeGreaterThan(0);
    expect(m.result.filter((a) => a.status === 200).length).toBeLessThanOrEqual(61);
    const other = await send({
      path: '/api/channels/flood/commands',
      json: { name: 'context' },
      from: '127.0.0.6',
    });
    expect(other.status).toBe(200);
    row('100 commands at once from one client (burst 60)', tally(m.result), 'no', m);
  }, 60_000);

  afterAll(() => {
    console.info(
      ['| input | answer | archived | RSS before → peak |', '|---|---|---|---|', ...table].join('\n'),
    );
  });
});
