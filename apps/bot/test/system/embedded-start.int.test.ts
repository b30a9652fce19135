/**
 * `ebb dev` as `npm start` runs it on a fresh clone: no DATABASE_URL (embedded PGlite, its data
 * directory copied from the install template), no model, the web channel only. A message posted is
 * answered and archived; stopped and started again on the same directory, the database is reopened,
 * not copied again, and still holds the channel.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { makeDefaultPgliteTemplate } from '@ebb/db';
import { dropPrefix } from '@ebb/queue/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const EBB = fileURLToPath(new URL('../../bin/ebb.mjs', import.meta.url));
const REPO_CONFIG = fileURLToPath(new URL('../../../../config.toml', import.meta.url));

const scratch = mkdtempSync(join(tmpdir(), 'ebb-embedded-start-'));
const dataDir = join(scratch, 'data');
const config = join(scratch, 'config.toml');
const prefix = `ebb-embedded-start-${process.pid}`;

interface RunningDev {
  readonly url: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** The JSON log lines so far. */
  lines(): Record<string, unknown>[];
}

/** `ebb dev` on the scratch config and data directory; resolves at its "Ebb is up" line. */
async function startDev(): Promise<RunningDev> {
  const env: NodeJS.ProcessEnv = { ...process.env, EBB_DATA_DIR: dataDir, EBB_REDIS_PREFIX: prefix };
  for (const name of [
    'DATABASE_URL',
    'OPENAI_API_KEY',
    'SLACK_BOT_TOKEN',
    'DISCORD_TOKEN',
    'EBB_ADMIN_TOKEN',
  ])
    delete env[name];
  const child = spawn(process.execPath, [EBB, 'dev', '--config', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      lines.push(entry);
      const up = /^Ebb is up: the web channel is at (\S+)/.exec(String(entry.msg));
      if (up?.[1] !== undefined) resolve(up[1]);
    });
    void exited.then((code) =>
      reject(
        new Error(`ebb dev exited (${code}) before it was up: ${stderr}${JSON.stringify(lines.at(-1))}`),
      ),
    );
  });
  return { url, child, exited, lines: () => lines };
}

async function stop(dev: RunningDev): Promise<number | null> {
  dev.child.kill('SIGTERM');
  return dev.exited;
}

/** A port nothing listens on now (the config refuses 0). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The one message of this test, always with the same id. */
function postHello(dev: RunningDev): Promise<Response> {
  return fetch(`${dev.url}/api/channels/fresh/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'm1', author: 'ana', text: 'hello Ebb' }),
  });
}

function databaseLine(dev: RunningDev): Record<string, unknown> | undefined {
  return dev.lines().find((line) => line.event === 'ebb.fallback' && line.part === 'database');
}

beforeAll(async () => {
  // What `npm install` made; made here in case this checkout's was removed (a no-op otherwise).
  await makeDefaultPgliteTemplate();
  const port = await freePort();
  writeFileSync(config, readFileSync(REPO_CONFIG, 'utf8').replace(/^port = \d+$/m, `port = ${port}`));
}, 120_000);
afterAll(async () => {
  await dropPrefix(prefix);
  rmSync(scratch, { recursive: true, force: true });
});

describe('ebb dev on the embedded database', () => {
  it('starts on a data directory copied from the template, answers, and reopens it after a restart', async () => {
    const first = await startDev();
    try {
      expect(databaseLine(first)).toMatchObject({ origin: 'template' });
      // Redis answers here: the line names it and the prefix set for this test.
      expect(first.lines().find((line) => line.event === 'queue.joined')).toMatchObject({ prefix });
      const response = await postHello(first);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { reply: string }).reply).toContain('[offline mode');
      // A second Ebb on the same data directory stops at start, naming the first: never two openers.
      await expect(startDev()).rejects.toThrow(/exited \(1\).*"error":"db_locked"/s);
    } finally {
      expect(await stop(first)).toBe(0);
    }

    const second = await startDev();
    try {
      expect(databaseLine(second)).toMatchObject({ origin: 'existing' });
      // The same id again: the archive still has it, so the first reply comes back as a duplicate.
      const again = await postHello(second);
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({ duplicate: true });
    } finally {
      expect(await stop(second)).toBe(0);
    }
  }, 120_000);
});
