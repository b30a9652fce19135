/**
 * Starts `apps/bot/test/ebb-process.ts` (a real `ebb start` on a test's schema, Redis prefix and fake
 * OpenAI) in a process of its own and resolves once it serves: its web URL, the child, its exit and
 * what it wrote to stderr so far.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const EBB_SCRIPT = fileURLToPath(new URL('./ebb-process.ts', import.meta.url));
const INSTRUMENT = fileURLToPath(new URL('./instrument-preload.ts', import.meta.url));

export interface SpawnedEbb {
  readonly url: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Everything the process logged (stderr) until now. */
  stderr(): string;
}

export interface SpawnEbbOptions {
  /** EBB_ADMIN_TOKEN of the child. Default: none, whatever the shell running the tests exports. */
  readonly adminToken?: string;
  /** The `[web]` table's lines. Default: no rate limit (`FULL_SPEED_WEB`). */
  readonly web?: readonly string[];
  /** Its DATABASE_URL (a proxy a test cuts). Default: the test database's. */
  readonly databaseUrl?: string;
  /** Its REDIS_URL (a Redis the test restarts). Default: Ebb's. */
  readonly redisUrl?: string;
  /** Its EBB_DATA_DIR (where its spool files go). Default: Ebb's. */
  readonly dataDir?: string;
  /** The whole config.toml it runs (`[llm] base_url` included). Default: the fake's, `web` and respond_to = "all". */
  readonly configToml?: string;
  /** More variables (OTEL_*). */
  readonly env?: Readonly<Record<string, string>>;
}

/** `[web]` with nothing set: the body and rate limits Ebb ships with. */
export const DEFAULT_LIMITS_WEB = ['[web]'] as const;

export async function spawnEbb(
  args: { readonly schema: string; readonly prefix: string; readonly fakeUrl: string },
  options: SpawnEbbOptions = {},
): Promise<SpawnedEbb> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', INSTRUMENT, EBB_SCRIPT, args.schema, args.prefix, args.fakeUrl],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Always set, '' for "not given": a variable the developer exported must not reach the child.
      env: {
        ...process.env,
        EBB_ADMIN_TOKEN: options.adminToken ?? '',
        EBB_PROCESS_WEB: options.web?.join('\n') ?? '',
        EBB_PROCESS_DATABASE_URL: options.databaseUrl ?? '',
        REDIS_URL: options.redisUrl ?? '',
        EBB_DATA_DIR: options.dataDir ?? '',
        EBB_PROCESS_CONFIG: options.configToml ?? '',
        ...options.env,
      },
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.startsWith('ready ')) resolve(line.slice('ready '.length));
    });
    void exited.then((code) => reject(new Error(`ebb exited early (${code}): ${stderr}`)));
  });
  return { url, child, exited, stderr: () => stderr };
}
