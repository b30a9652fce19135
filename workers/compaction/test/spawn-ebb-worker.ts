/**
 * The real `ebb worker` (apps/bot/bin/ebb.mjs, from the sources under the `ebb-source` condition the
 * test runner sets in NODE_OPTIONS) in a process of its own. `ebbWorkerProcess` starts it with a
 * config file and the environment a test gives it, nothing the developer exported for Ebb, and reads
 * its JSON log lines; `spawnEbbWorker` starts it on a test's schema and Redis prefix with the given
 * config.toml, and resolves once it takes jobs (its `worker.ready` line).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { redisUrl } from '@ebb/queue/test-support';

const EBB = fileURLToPath(new URL('../../../apps/bot/bin/ebb.mjs', import.meta.url));

export interface SpawnedWorker {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Its log lines so far, parsed. */
  lines(): readonly Record<string, unknown>[];
  /** Its log lines so far, one per line: the time since the first, the level, the event, the message. */
  events(): string;
  /**
   * Resolves at its first log line with this `event` (the log contract's names, docs/operations.md "Every
   * event", not its wording); rejects if it exits first (with what it wrote to stderr, when that is
   * piped).
   */
  logged(event: string): Promise<Record<string, unknown>>;
}

/** `ebb worker --config <config>`, its environment this process's less EBB_*, OPENAI_*, SLACK_* and DISCORD_*, then `env`. */
export function ebbWorkerProcess(args: {
  /** The config.toml it reads. */
  readonly config: string;
  /** Its variables (NODE_ENV is `production` unless set here). */
  readonly env: Readonly<Record<string, string>>;
  /** `pipe` (the default) keeps its stderr for the error of `logged`; `inherit` shows it as it comes. */
  readonly stderr?: 'pipe' | 'inherit';
}): SpawnedWorker {
  // A variable the developer exported must not reach the child.
  const clean: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(clean)) if (/^(EBB_|OPENAI_|SLACK_|DISCORD_)/.test(name)) delete clean[name];
  const child = spawn(process.execPath, [EBB, 'worker', '--config', args.config], {
    stdio: ['ignore', 'pipe', args.stderr ?? 'pipe'],
    env: { ...clean, NODE_ENV: 'production', ...args.env },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const lines: Record<string, unknown>[] = [];
  const waiting = new Set<() => void>();
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    for (const check of waiting) check();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    lines: () => lines,
    events: () => {
      const first = Number(lines[0]?.time ?? 0);
      return lines
        .map((l) => `+${Number(l.time) - first}ms ${String(l.level)} ${String(l.event)} ${String(l.msg)}`)
        .join('\n');
    },
    logged: (event) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const line = lines.find((l) => l.event === event);
          if (!line) return;
          waiting.delete(check);
          resolve(line);
        };
        waiting.add(check);
        check();
        void exited.then((code) =>
          reject(new Error(`ebb worker exited (${code}) before logging ${event}: ${stderr}`)),
        );
      }),
  };
}

export async function spawnEbbWorker(args: {
  /** DATABASE_URL: the test's schema (`freshSchemaDb().url`). */
  readonly databaseUrl: string;
  readonly prefix: string;
  /** The worker's config.toml. */
  readonly configToml: string;
  /** More variables (OTEL_*). */
  readonly env?: Readonly<Record<string, string>>;
}): Promise<SpawnedWorker> {
  const dir = await mkdtemp(join(tmpdir(), 'ebb-worker-'));
  const config = join(dir, 'config.toml');
  await writeFile(config, args.configToml);
  const worker = ebbWorkerProcess({
    config,
    stderr: 'inherit',
    env: {
      OPENAI_API_KEY: 'test-key',
      DATABASE_URL: args.databaseUrl,
      REDIS_URL: redisUrl(),
      EBB_REDIS_PREFIX: args.prefix,
      EBB_METRICS_PORT: '0',
      ...args.env,
    },
  });
  const exited = worker.exited.then(async (code) => {
    await rm(dir, { recursive: true, force: true });
    return code;
  });
  await worker.logged('worker.ready');
  return { ...worker, exited };
}
