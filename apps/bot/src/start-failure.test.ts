import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { describeStartFailure } from './start-failure.js';

const EBB = fileURLToPath(new URL('../bin/ebb.mjs', import.meta.url));

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

  it('says a refused credential is one', () => {
    const err = new Error('An API error occurred: invalid_auth');
    expect(describeStartFailure(err)).toMatchObject({
      kind: 'refused',
      hint: expect.stringMatching(/credential was refused/),
    });
  });
});

describe('ebb worker that cannot start', () => {
  it('exits 1 with one JSON line naming the cause and a hint, not a stack', () => {
    const { status, stdout, stderr } = spawnSync(process.execPath, [EBB, 'worker'], {
      env: { ...process.env, NODE_ENV: 'production', DATABASE_URL: 'postgres://ebb@127.0.0.1:1/ebb' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(status).toBe(1);
    const lines = `${stdout}${stderr}`
      .trim()
      .split('\n')
      .filter((l) => l.includes('could not start'));
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ level: 60, msg: 'Ebb worker could not start', error: 'ECONNREFUSED' }),
    ]);
    expect(`${stdout}${stderr}`).not.toMatch(/\n\s+at /);
  }, 70_000);
});

describe('ebb start that cannot start', () => {
  it('exits 1 with one JSON line naming the cause and a hint, not a stack', () => {
    const { status, stdout, stderr } = spawnSync(process.execPath, [EBB, 'start'], {
      env: {
        ...process.env,
        NODE_ENV: 'production',
        DATABASE_URL: 'postgres://ebb@127.0.0.1:1/ebb',
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(status).toBe(1);
    const lines = `${stdout}${stderr}`
      .trim()
      .split('\n')
      .filter((l) => l.includes('could not start'));
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? '{}');
    expect(line).toMatchObject({ level: 60, msg: 'Ebb could not start', error: 'ECONNREFUSED' });
    expect(line.hint).toMatch(/network failure/);
    expect(`${stdout}${stderr}`).not.toMatch(/\n\s+at /);
  }, 70_000);
});
