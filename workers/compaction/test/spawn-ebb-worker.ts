/**
 * Starts the real `ebb worker` (apps/bot/bin/ebb.mjs, from the sources under the `ebb-source`
 * condition the test runner sets in NODE_OPTIONS) on a test's schema and Redis prefix, with the
 * given config.toml, and resolves once it takes jobs (its `worker.ready` line).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { redisUrl } from '@ebb/testing/redis';

const EBB = fileURLToPath(new URL('../../../apps/bot/bin/ebb.mjs', import.meta.url));

export interface SpawnedWorker {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Its log lines so far, parsed. */
  lines(): readonly Record<string, unknown>[];
}

export async function spawnEbbWorker(args: {
  /** DATABASE_URL: the test's schema (`freshSchemaDb().url`). */
  readonly databaseUrl: string;
  readonly prefix: string;
  /** The worker's config.toml. */
  readonly configToml: string;
}): Promise<SpawnedWorker> {
  const dir = await mkdtemp(join(tmpdir(), 'ebb-worker-'));
  const config = join(dir, 'config.toml');
  await writeFile(config, args.configToml);
  // A variable the developer exported must not reach the child.
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (/^(EBB_|OPENAI_|SLACK_|DISCORD_)/.test(name)) delete env[name];
  const child = spawn(process.execPath, [EBB, 'worker', '--config', config], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...env,
      NODE_ENV: 'production',
      OPENAI_API_KEY: 'test-key',
      DATABASE_URL: args.databaseUrl,
      REDIS_URL: redisUrl(),
      EBB_REDIS_PREFIX: args.prefix,
      EBB_METRICS_PORT: '0',
    },
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => void rm(dir, { recursive: true, force: true }).then(() => resolve(code))),
  );
  const lines: Record<string, unknown>[] = [];
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      lines.push(parsed);
      if (parsed.event === 'worker.ready') resolve();
    });
    void exited.then((code) => reject(new Error(`ebb worker exited early (${code})`)));
  });
  return { child, exited, lines: () => lines };
}
