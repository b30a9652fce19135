/**
 * What the operator commands (`ebb status`, `ebb compact`, `ebb memories`) share: the config
 * (`readConfig`), the environment and the stores on the deployment's database (`withStores`), opened
 * for one command and closed after.
 * A bad environment or config, or a database that cannot be reached, becomes sentences on `err` and
 * exit code 1, never a stack trace.
 *
 * The embedded database (PGlite, no `DATABASE_URL`) belongs to one process: a second process opening
 * its directory while the bot runs corrupts it. `createDb` locks it (`embedded-lock.ts` in
 * `@ebb/db`), so these commands open it when no running Ebb holds it, and otherwise say which
 * process does and how to get the same answer from inside the running bot. (`--embedded`, which once
 * said "Ebb is stopped", is taken and changes nothing.)
 */
import { type EbbConfig, type EbbEnv, loadConfig, loadEnv } from '@ebb/config';
import { EbbError } from '@ebb/core';
import {
  type Database,
  type DbErrorCode,
  PgChannelStore,
  PgMemoryStore,
  PgRunStore,
  PgUsageStore,
} from '@ebb/db';
import type { CommandIo } from './io.js';
import { openDatabase, reportConfigError } from './runtime.js';

export interface StoreCommandDeps {
  /** The environment (default `process.env`): DATABASE_URL, EBB_DATA_DIR, REDIS_URL, EBB_REDIS_PREFIX, EBB_CONFIG. */
  readonly env?: NodeJS.ProcessEnv;
  /** An open database to use instead of the environment's; the caller closes it (tests pass a fresh schema). */
  readonly database?: Database;
  /** Where a relative `--config` and the default `./config.toml` resolve (default `process.cwd()`). */
  readonly cwd?: string;
}

export interface StoreSessionOptions {
  /** The command, as error lines name it (`ebb status`). */
  readonly command: string;
  /** What an embedded deployment uses instead of this command, for the error when it has no `DATABASE_URL`. */
  readonly embeddedHint: string;
  /** `--embedded`: accepted for the scripts that pass it; the lock decides now. */
  readonly embedded?: boolean | undefined;
}

export interface StoreSession {
  readonly env: EbbEnv;
  readonly database: Database;
  readonly channels: PgChannelStore;
  readonly memories: PgMemoryStore;
  readonly runs: PgRunStore;
  readonly usage: PgUsageStore;
}

/**
 * Reads the config (`--config PATH`, otherwise `EBB_CONFIG`, otherwise `./config.toml`, otherwise
 * built-in defaults). A broken one is reported on `err` and becomes exit code 1 (the number returned).
 */
export async function readConfig(
  command: string,
  path: string | undefined,
  io: CommandIo,
  deps: StoreCommandDeps,
): Promise<EbbConfig | number> {
  try {
    return await loadConfig({
      ...(deps.env === undefined ? {} : { env: deps.env }),
      ...(deps.cwd === undefined ? {} : { cwd: deps.cwd }),
      ...(path === undefined ? {} : { path }),
    });
  } catch (err) {
    return reportConfigError(command, err, io);
  }
}

/** Reads the environment (`deps.env`, else the process's, as `loadEnv` does); a bad one is reported and becomes exit code 1. */
export function readEnv(command: string, io: CommandIo, deps: StoreCommandDeps): EbbEnv | number {
  try {
    return loadEnv(deps.env);
  } catch (err) {
    return reportConfigError(command, err, io);
  }
}

/** Runs `body` with the stores open and returns its exit code. */
export async function withStores(
  options: StoreSessionOptions,
  io: CommandIo,
  deps: StoreCommandDeps,
  body: (session: StoreSession) => Promise<number>,
): Promise<number> {
  const { command } = options;
  const env = readEnv(command, io, deps);
  if (typeof env === 'number') return env;

  let database = deps.database;
  if (database === undefined) {
    try {
      database = await openDatabase(env);
    } catch (err) {
      if (err instanceof EbbError && err.code === ('db_locked' satisfies DbErrorCode)) {
        io.err(`${command}: ${err.message}.`);
        io.err(
          `DATABASE_URL is not set, so Ebb runs on its embedded database, which only one process may open at a time. ${options.embeddedHint} Or stop it and run this again.`,
        );
        return 1;
      }
      return reportStoreError(command, err, io);
    }
  }
  const db = database.db;
  try {
    return await body({
      env,
      database,
      channels: new PgChannelStore({ db }),
      memories: new PgMemoryStore({ db }),
      runs: new PgRunStore({ db }),
      usage: new PgUsageStore({ db }),
    });
  } catch (err) {
    return reportStoreError(command, err, io);
  } finally {
    if (deps.database === undefined) await database.close();
  }
}

/** A store failure as sentences on `err` (exit code 1); anything that is not an `EbbError` is a bug and rethrown. */
function reportStoreError(command: string, err: unknown, io: CommandIo): number {
  if (!(err instanceof EbbError)) throw err;
  io.err(`${command}: ${err.message}`);
  switch (err.code) {
    case 'db_schema' satisfies DbErrorCode:
      io.err('The database has no Ebb tables yet (or older ones): run `ebb migrate` first.');
      break;
    case 'db_unavailable' satisfies DbErrorCode:
      io.err('Check that the database is running and that DATABASE_URL points at it.');
      break;
  }
  return 1;
}
