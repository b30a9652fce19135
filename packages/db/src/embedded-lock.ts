/**
 * One process at a time on an embedded database. PGlite takes no lock of its own, and a second
 * process opening a data directory another one has open corrupts it. `createDb` takes this lock (a
 * file beside the directory, `<dataDir>.lock`, holding the holder's pid and command) before it
 * opens one, and gives it up at `close`. A lock whose process is gone (killed, the machine
 * restarted) is stale: the next opener takes it over. An open refused because the directory is held
 * throws `db_locked`, naming the holder.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { DbError } from './pg-errors.js';

interface Holder {
  readonly pid: number;
  /** What holds it: the program and its command words (`ebb dev`, `ebb memories forget`), no argument. */
  readonly command: string;
  readonly since: string;
}

export interface EmbeddedLock {
  release(): void;
}

/** Takes the lock of `dataDir`, or throws `db_locked` naming the live process that holds it. */
export function lockEmbedded(dataDir: string): EmbeddedLock {
  const path = `${dataDir}.lock`;
  const mine: Holder = {
    pid: process.pid,
    command: commandOf(process.argv),
    since: new Date().toISOString(),
  };
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, JSON.stringify(mine), { flag: 'wx' });
      return {
        release: () => {
          // Only ours: a lock taken over after this process was thought gone is not.
          if (holderOf(path)?.pid === process.pid) rmSync(path, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
    }
    const holder = holderOf(path);
    if (holder !== undefined && holder.pid !== process.pid && isAlive(holder.pid))
      throw new DbError(
        `the embedded database in ${dataDir} is open in another process (pid ${holder.pid}, since ${holder.since}: ${holder.command})`,
        { code: 'db_locked' },
      );
    // Stale (its process is gone), unreadable, or this process's own: taken over.
    rmSync(path, { force: true });
  }
}

/**
 * The program and the command words after it, up to the first option or argument: an argument may be
 * text a person is taking back (`ebb memories forget --match 'sk-live-…'`), and the lock file and
 * another process's error would keep a copy of it.
 */
export function commandOf(argv: readonly string[]): string {
  const [, script = 'node', ...rest] = argv;
  const words: string[] = [basename(script).replace(/\.m?js$/, '')];
  for (const word of rest.slice(0, 2)) {
    if (!/^[a-z][a-z-]*$/.test(word)) break;
    words.push(word);
  }
  return words.join(' ');
}

function holderOf(path: string): Holder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<Holder>;
    return typeof parsed.pid === 'number'
      ? { pid: parsed.pid, command: String(parsed.command ?? ''), since: String(parsed.since ?? '') }
      : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
