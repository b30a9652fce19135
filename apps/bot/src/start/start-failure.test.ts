import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { describeStartFailure } from './start-failure.js';

const EBB = fileURLToPath(new URL('../../bin/ebb.mjs', import.meta.url));

describe('describeStartFailure', () => {
  it('tells a name that does not resolve from a credential problem', async () => {
    const err = await fetch('http://ebb-start-failure.invalid/').catch((e: unknown) => e);
    const failure = describeStartFailure(err);
    expect(failure.kind).toBe('dns');
    expect(failure.error).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
    expect(failure.hint).toMatch(/^a DNS failure: ebb-start-failure\.invalid does not resolve/);
  });

  it('tells a service that does not answer from a credential problem', async () => {
    const client = new pg.Client({ connectionString: 'postgres://ebb@127.0.0.1:1/ebb' });
    const err = await client.connect().catch((e: unknown) => e);
    expect(describeStartFailure(err)).toMatchObject({
      kind: 'network',
      error: 'ECONNREFUSED',
      hint: expect.stringMatching(/^a network failure \(ECONNREFUSED\)/),
    });
  });

  it('names the taken port and the setting that moves it', async () => {
    const listen = (server: Server, port: number) =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
      });
    const first = createServer();
    const second = createServer();
    const port = await listen(first, 0);
    try {
      const err = await listen(second, port).catch((e: unknown) => e);
      expect(describeStartFailure(err)).toMatchObject({
        kind: 'address_in_use',
        error: 'EADDRINUSE',
        hint: `port ${port} is taken by another process: give this process its own port ([web] port, or EBB_METRICS_PORT for ebb worker)`,
      });
    } finally {
      await new Promise((resolve) => first.close(resolve));
    }
  });

  it('says a refused credential is one', () => {
    const err = new Error('An API error occurred: invalid_auth');
    expect(describeStartFailure(err)).toMatchObject({
      kind: 'refused',
      hint: expect.stringMatching(/credential was refused/),
    });
  });
});

/** Runs `ebb <command>` against a Postgres that refuses connections: its exit code, its `could not start` lines, all its output. */
function startWithoutPostgres(command: string) {
  const { status, stdout, stderr } = spawnSync(process.execPath, [EBB, command], {
    env: { ...process.env, NODE_ENV: 'production', DATABASE_URL: 'postgres://ebb@127.0.0.1:1/ebb' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const output = `${stdout}${stderr}`;
  const lines = output
    .trim()
    .split('\n')
    .filter((l) => l.includes('could not start'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { status, lines, output };
}

describe.each([
  ['start', 'Ebb could not start', 'ebb.start_failed'],
  ['worker', 'Ebb worker could not start', 'worker.start_failed'],
])('ebb %s that cannot start', (command, msg, event) => {
  it('exits 1 with one JSON line naming the cause and a hint, not a stack', () => {
    const { status, lines, output } = startWithoutPostgres(command);
    expect(status).toBe(1);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        event,
        msg,
        error: 'ECONNREFUSED',
        hint: expect.stringMatching(/network failure/),
      }),
    ]);
    expect(output).not.toMatch(/\n\s+at /);
  }, 70_000);
});

describe('ebb start with the web channel beyond loopback', () => {
  /** `ebb start` with `config.toml` text and extra environment: exit code and the JSON lines it printed. */
  function start(toml: string, env: Record<string, string> = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'ebb-exposure-'));
    const config = join(dir, 'config.toml');
    writeFileSync(config, toml);
    const { status, stdout, stderr } = spawnSync(process.execPath, [EBB, 'start', '--config', config], {
      env: {
        ...process.env,
        NODE_ENV: 'production',
        EBB_ADMIN_TOKEN: '',
        // Refuses connections: a start that gets past the exposure check stops here.
        DATABASE_URL: 'postgres://ebb@127.0.0.1:1/ebb',
        ...env,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    rmSync(dir, { recursive: true, force: true });
    const lines = `${stdout}${stderr}`
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return { status, lines };
  }

  it('refuses to start without EBB_ADMIN_TOKEN, in one line that says what to set', () => {
    const { status, lines } = start('[web]\nhost = "0.0.0.0"\n');
    expect(status).toBe(1);
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'Ebb could not start',
        error: 'start_refused',
        cause: expect.stringContaining('EBB_ADMIN_TOKEN is not set'),
        hint: expect.stringContaining('set EBB_ADMIN_TOKEN'),
      }),
    ]);
  }, 70_000);

  it('with public_api = true, warns that the API is open and goes on starting', () => {
    const { status, lines } = start('[web]\nhost = "0.0.0.0"\npublic_api = true\n');
    expect(status).toBe(1);
    expect(lines.map((l) => l.event)).toEqual(['web.public_api', 'ebb.start_failed']);
    expect(lines[1]).toMatchObject({ level: 60, error: 'ECONNREFUSED' });
    expect(lines[0]).toMatchObject({
      level: 40,
      msg: expect.stringContaining('anyone who reaches 0.0.0.0:3000'),
    });
  }, 70_000);

  it('with EBB_ADMIN_TOKEN, goes on starting without a warning', () => {
    const { lines } = start('[web]\nhost = "0.0.0.0"\n', { EBB_ADMIN_TOKEN: 'a-long-enough-admin-token' });
    expect(lines.map((l) => l.error)).toEqual(['ECONNREFUSED']);
  }, 70_000);
});
