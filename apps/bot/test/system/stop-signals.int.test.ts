/**
 * Ctrl-C in a terminal, as a newcomer stops Ebb: `ebb dev` on a fresh embedded database, run in a
 * real pseudo-terminal by `script` (util-linux), so the \x03 byte written to it makes the terminal
 * send SIGINT to the whole foreground process group. Under `npm start` that is two signals (npm
 * forwards its own copy to Ebb), and the second must not kill Ebb before its shutdown. Without npm,
 * a second Ctrl-C during the shutdown is logged and ignored, and a third exits at once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeDefaultPgliteTemplate } from '@ebb/db';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, expect, it } from 'vitest';

const EBB = fileURLToPath(new URL('../../bin/ebb.mjs', import.meta.url));
const REPO_CONFIG = fileURLToPath(new URL('../../../../config.toml', import.meta.url));
const CTRL_C = '\x03';

const scratch = mkdtempSync(join(tmpdir(), 'ebb-ctrl-c-'));
let fake: FakeOpenAiServer;
/** Resolves once the model holds a turn; the turn is answered when `release` is called. */
let modelCalled: Promise<void>;
let release: () => void = () => {};

beforeAll(async () => {
  // What `npm install` made; made here in case this checkout's was removed (a no-op otherwise).
  await makeDefaultPgliteTemplate();
  fake = await FakeOpenAiServer.start();
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  modelCalled = new Promise<void>((called) => {
    fake.reply(async () => {
      called();
      await released;
      return { content: 'ack' };
    });
  });
}, 120_000);

afterAll(async () => {
  release();
  await fake?.close();
  rmSync(scratch, { recursive: true, force: true });
});

interface Terminal {
  readonly child: ChildProcess;
  /** What the terminal showed until now. */
  output(): string;
  /** Resolves once the terminal shows `text`; rejects if the process ends first. */
  shows(text: string): Promise<void>;
  /** Types Ctrl-C. */
  ctrlC(): void;
  /** The exit status of `command` (`script -e`). */
  readonly exited: Promise<number | null>;
}

/** Runs `command` with `sh -c` in a new pseudo-terminal, in `cwd`, with Ebb's environment for `name`. */
function inTerminal(name: string, command: string, cwd = scratch): Terminal {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    EBB_DATA_DIR: join(scratch, name, 'data'),
    // No Redis: the in-process queue, so nothing is left in a shared Redis.
    REDIS_URL: 'redis://127.0.0.1:1',
  };
  for (const variable of [
    'DATABASE_URL',
    'OPENAI_API_KEY',
    'SLACK_BOT_TOKEN',
    'DISCORD_TOKEN',
    'EBB_ADMIN_TOKEN',
  ])
    delete env[variable];
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  const waiting = new Set<() => void>();
  const onOutput = (chunk: Buffer) => {
    output += chunk.toString();
    for (const check of waiting) check();
  };
  child.stdout?.on('data', onOutput);
  child.stderr?.on('data', onOutput);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => output,
    ctrlC: () => child.stdin?.write(CTRL_C),
    shows: (text) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!output.includes(text)) return;
          waiting.delete(check);
          resolve();
        };
        waiting.add(check);
        check();
        void exited.then((code) =>
          reject(new Error(`exited (${code}) before showing ${JSON.stringify(text)}:\n${output}`)),
        );
      }),
  };
}

/** A port nothing listens on now (the config refuses 0). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A folder for one run: a config.toml (the repo's, on a free port, unless `toml` is given). */
async function folder(name: string, toml?: (port: number) => string): Promise<{ dir: string; port: number }> {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const text = toml
    ? toml(port)
    : readFileSync(REPO_CONFIG, 'utf8').replace(/^port = \d+$/m, `port = ${port}`);
  writeFileSync(join(dir, 'config.toml'), text);
  return { dir, port };
}

async function underNpm(): Promise<void> {
  const { dir } = await folder('npm');
  // The tail of the root package.json's `start` (`... && exec ebb dev`), without the build before it.
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ private: true, scripts: { start: `exec node ${EBB} dev --config config.toml` } }),
  );
  const terminal = inTerminal('npm', 'exec npm start --silent', dir);
  await terminal.shows('Ebb is up');
  terminal.ctrlC();
  await terminal.shows('Ebb stopped');
  expect(await terminal.exited, terminal.output()).toBe(0);
  expect(terminal.output()).toContain('stopping Ebb: finishing the turns in hand');
  expect(terminal.output()).not.toContain('stopping at once');
}

async function threeTimes(): Promise<void> {
  const { dir, port } = await folder(
    'direct',
    (port) => `[llm]\nbase_url = "${fake.url}"\n[web]\nport = ${port}\n[web.bot]\nrespond_to = "all"\n`,
  );
  const terminal = inTerminal('direct', `exec node ${EBB} dev --config config.toml`, dir);
  await terminal.shows('Ebb is up');
  // A turn the model holds, so the shutdown waits for it (up to the grace period).
  const posted = fetch(`http://127.0.0.1:${port}/api/channels/ctrl-c/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: 'ana', text: 'hello' }),
  }).catch(() => undefined);
  await modelCalled;
  terminal.ctrlC();
  await terminal.shows('stopping Ebb: finishing the turns in hand');
  terminal.ctrlC();
  await terminal.shows('already stopping');
  terminal.ctrlC();
  expect(await terminal.exited, terminal.output()).toBe(1);
  expect(terminal.output()).toContain('stopping at once');
  expect(terminal.output()).not.toContain('Ebb stopped');
  await posted;
}

it('stops in order on Ctrl-C under npm start, ignores a second Ctrl-C and exits at once on a third', async () => {
  // Both at once: each is mostly a start of `ebb dev` (about 2 s).
  await Promise.all([underNpm(), threeTimes()]);
}, 60_000);
