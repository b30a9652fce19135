import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { DEFAULT_JOB_LATENCY } from '../commands/simulate-defaults.js';
import { main } from './cli.js';
import { COMMAND_USAGES, commandUsageText, helpRequest, usageText } from './cli-usage.js';

const EBB = fileURLToPath(new URL('../../bin/ebb.mjs', import.meta.url));

/** Runs `ebb <argv>` in this process. */
async function ebb(...argv: string[]) {
  const io = captureIo();
  const code = await main(argv, io);
  return { code, out: io.stdout(), err: io.stderr() };
}

/** The block `ebb help <name>` prints: its synopsis, a blank line, its description. */
function blockOf(name: string): string {
  const usage = COMMAND_USAGES.find((u) => u.name === name);
  if (!usage) throw new Error(`no command ${name}`);
  return commandUsageText([usage]);
}

// Every command rejects an option it does not know (parseArgs, strict) with exit 2, so if help were
// not answered first these would fail with 2 rather than start anything.
describe.each(COMMAND_USAGES.map((u) => [u.name, u] as const))('ebb %s', (name, usage) => {
  const words = name.split(' ');
  it.each([
    ['--help', [...words, '--help']],
    ['-h', [...words, '-h']],
    ['help', ['help', ...words]],
  ])('prints its own usage for %s and exits 0', async (_, argv) => {
    const { code, out, err } = await ebb(...argv);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toBe(blockOf(name));
    expect(out.startsWith(`Usage: ebb ${usage.synopsis[0]}\n`)).toBe(true);
  });
});

describe('ebb help', () => {
  it('prints every command, and so do ebb --help and ebb -h (exit 0)', async () => {
    const all = await ebb('help');
    expect(all.code).toBe(0);
    expect(all.out).toBe(usageText());
    expect(all.out).toMatch(/^Usage: ebb <command> \[options\]\n\nCommands:\n/);
    for (const usage of COMMAND_USAGES) {
      for (const line of [...usage.synopsis, ...usage.description]) expect(all.out).toContain(line);
    }
    expect(await ebb('--help')).toEqual(all);
    expect(await ebb('-h')).toEqual(all);
    // Bare `ebb` prints it too, but did not do what was asked.
    expect(await ebb()).toEqual({ ...all, code: 1 });
  });

  it('answers --help among the options and arguments, and for an alias', async () => {
    expect((await ebb('simulate', 'chat.jsonl', '--json', '--help')).out).toBe(blockOf('simulate'));
    expect((await ebb('memories', 'forget', '--id', '7', '-h')).out).toBe(blockOf('memories forget'));
    expect((await ebb('forget', '--help')).out).toBe(blockOf('memories forget'));
    expect((await ebb('help', 'forget')).out).toBe(blockOf('memories forget'));
    expect((await ebb('simulate', '--help')).out).toContain(`(default ${DEFAULT_JOB_LATENCY})`);
  });

  it('prints every subcommand of a group', async () => {
    const memories = `${blockOf('memories list')}\n\n${blockOf('memories forget')}`;
    expect(await ebb('help', 'memories')).toEqual({ code: 0, out: memories, err: '' });
    expect((await ebb('memories', '--help')).out).toBe(memories);
    expect((await ebb('config', '--help')).out).toBe(blockOf('config check'));
  });

  it('refuses help for a command that does not exist (exit 2, the whole usage on err)', async () => {
    const { code, out, err } = await ebb('help', 'frobnicate');
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toBe(`ebb: unknown command: frobnicate\n\n${usageText()}`);
    expect((await ebb('frobnicate', '--help')).code).toBe(2);
  });

  it("shows the command's own usage under a mistake in its arguments", async () => {
    const { code, err } = await ebb('compact');
    expect(code).toBe(2);
    expect(err).toBe(`ebb: compact takes one channel KEY\n\n${blockOf('compact')}`);
    expect((await ebb('config', 'chekc')).err).toBe(
      `ebb: unknown command: config chekc\n\n${blockOf('config check')}`,
    );
    expect((await ebb('frobnicate')).err).toBe(`ebb: unknown command: frobnicate\n\n${usageText()}`);
  });

  it('takes --from-archive KEY or a TRANSCRIPT, and --since, --suggest and --embedded only with the first', async () => {
    const problems = [
      [
        ['simulate', 'chat.jsonl', '--from-archive', 'web:a'],
        'give a TRANSCRIPT file or --from-archive KEY, not both',
      ],
      [
        ['simulate', 'chat.jsonl', '--suggest'],
        '--since, --suggest and --embedded go with --from-archive KEY',
      ],
      [
        ['simulate', '--from-archive', 'web:a', '--since', '7 days'],
        '--since takes a duration: 90m, 12h, 7d, 2w',
      ],
      [
        ['simulate', '--from-archive', 'web:a', '--since', '0d'],
        '--since takes a duration: 90m, 12h, 7d, 2w',
      ],
      [
        ['simulate', '--from-archive', 'web:a', '--rate', '5'],
        '--from-archive replays the channel as archived: --channel, --job-latency, --rate and --limit do not apply',
      ],
    ] as const;
    for (const [argv, problem] of problems) {
      const { code, err } = await ebb(...argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(err).toBe(`ebb: ${problem}\n\n${blockOf('simulate')}`);
    }
  });
});

describe('ebb --version', () => {
  const root = fileURLToPath(new URL('../../../../', import.meta.url));
  const versionOf = (dir: string) =>
    (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { version?: string }).version;

  it("prints the repository's version, which every package shares (semver), and exits 0", async () => {
    const version = versionOf('.');
    expect(version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    for (const flag of ['--version', '-v'])
      expect(await ebb(flag)).toEqual({ code: 0, out: `ebb ${version}`, err: '' });
    const workspaces = ['apps', 'packages', 'workers'].flatMap((group) =>
      readdirSync(join(root, group)).map((name) => `${group}/${name}`),
    );
    const versions = workspaces.filter((dir) => existsSync(join(root, dir, 'package.json'))).map(versionOf);
    expect(versions.length).toBeGreaterThan(10);
    expect(new Set(versions)).toEqual(new Set([version]));
  });
});

describe('helpRequest', () => {
  it('is no help request without a help word, or with one only after --', () => {
    expect(helpRequest([])).toEqual({ kind: 'none' });
    expect(helpRequest(['dev'])).toEqual({ kind: 'none' });
    expect(helpRequest(['simulate', '--', '--help'])).toEqual({ kind: 'none' });
    expect(helpRequest(['compact', 'web:-h'])).toEqual({ kind: 'none' });
  });
});

/** A config.toml in a new directory that breaks three rules at once: a cross-field rule and two sums. */
function badConfigDir(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ebb-bad-config-'));
  const file = join(dir, 'config.toml');
  writeFileSync(
    file,
    '[llm]\ncontext_window = 4000\n[compaction]\nbackground_threshold = 0.9\n[memory]\nrecall_max_tokens = 1000\n',
  );
  return { dir, file };
}

const BAD_CONFIG_PROBLEMS = [
  /config\.toml: compaction\.background_threshold: must be below aggressive_threshold \(0\.85, default\); found 0\.9$/,
  /config\.toml: llm\.context_window: must be above max_output_tokens .* = 5416; found 4000$/,
  /config\.toml: llm\.context_window: must be above compaction\.message_max_tokens .* = 5096; found 4000$/,
];

// The commands that run until stopped read their config before anything starts: a bad one is every
// problem as a sentence and exit 1, as `ebb config check` and `ebb status` report it (before, the
// ConfigError escaped as a stack trace).
describe.each(['dev', 'start', 'worker'])('ebb %s with a bad config', (command) => {
  it('lists every problem with its file, key and rule, says what to do, and exits 1', async () => {
    const { dir, file } = badConfigDir();
    try {
      const { code, out, err } = await ebb(command, '--config', file);
      const lines = err.trimEnd().split('\n');
      expect(lines).toHaveLength(4);
      for (const [i, problem] of BAD_CONFIG_PROBLEMS.entries()) expect(lines[i]).toMatch(problem);
      expect(lines[3]).toBe(`ebb ${command}: fix the problems above and run it again`);
      expect(out).toBe('');
      expect(code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bin/ebb.mjs', () => {
  it('stops quietly when the reader of its output goes away, as `ebb transcript | head -1` does', async () => {
    const child = spawn(process.execPath, [EBB, 'transcript', '--messages', '20000'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = once(child, 'exit');
    // The first line arrives; then the reader closes the pipe while the transcript is still writing.
    await once(child.stdout, 'data');
    child.stdout.destroy();
    const [code, signal] = await exited;
    expect(stderr).toBe('');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });

  it('starts nothing on a bad config: the problems on stderr, no stack trace, exit 1', () => {
    const { dir, file } = badConfigDir();
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info' };
      for (const name of ['DATABASE_URL', 'EBB_CONFIG', 'EBB_DATA_DIR'] as const) delete env[name];
      const done = spawnSync(process.execPath, [EBB, 'start', '--config', file], {
        cwd: dir,
        env,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(done.stderr).not.toMatch(/^\s+at /m);
      expect(done.stderr.trimEnd().split('\n')).toHaveLength(4);
      expect(done.stderr).toContain('ebb start: fix the problems above and run it again');
      expect(done.stdout).toBe('');
      expect(done.status).toBe(1);
      // Nothing was started: no embedded database beside the config.
      expect(readdirSync(dir)).toEqual(['config.toml']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints the usage of ebb dev and exits without starting anything', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'ebb-help-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info' };
      for (const name of ['DATABASE_URL', 'REDIS_URL', 'EBB_CONFIG', 'EBB_DATA_DIR'] as const)
        delete env[name];
      const done = spawnSync(process.execPath, [EBB, 'dev', '--help'], {
        cwd,
        env,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(done.stderr).toBe('');
      expect(done.status).toBe(0);
      expect(done.stdout).toBe(`${blockOf('dev')}\n`);
      // ebb dev would have made its embedded database here (./.ebb) and kept running.
      expect(readdirSync(cwd)).toEqual([]);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
