/**
 * The file operations the file spool (`file-inbound-spool.ts`) makes durable: a read that takes a
 * missing file as empty, a replacement that leaves the old file or the new one whole (never half of
 * either), the directory sync that makes the replacement survive a crash, and an append to a file
 * nothing else tracks (the dead letters) that starts on a line of its own. What the lines hold is
 * `spool-records.ts`.
 */
import type { FileHandle } from 'node:fs/promises';
import { appendFile, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A file's bytes; none when there is no file (or no directory to hold one). */
export async function readIfAny(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    const { code } = err as NodeJS.ErrnoException;
    if (code === 'ENOENT' || code === 'ENOTDIR') return Buffer.alloc(0);
    throw err;
  }
}

/**
 * Replaces a file with `text`, whole or not at all: written to `<path>.tmp` beside it, synced, and
 * renamed over it. The caller syncs the directory next (`syncDirectory`), so that the rename, the
 * old text's going, survives a crash too.
 */
export async function replaceFile(path: string, text: string): Promise<void> {
  const temp = `${path}.tmp`;
  await mkdir(dirname(path), { recursive: true });
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, 'w');
    await handle.writeFile(text);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, path);
  } catch (err) {
    await handle?.close().catch(() => {});
    await rm(temp, { force: true }).catch(() => {});
    throw err;
  }
}

export async function syncDirectory(path: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'r');
    await handle.sync();
  } catch (err) {
    // Some systems cannot open or sync a directory (Windows): the rename is as durable as they allow.
    const { code } = err as NodeJS.ErrnoException;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL') throw err;
  } finally {
    await handle?.close();
  }
}

/**
 * Appends one line to a file nothing else tracks (the dead letters), synced: on a line of its own
 * even if the file ends in a fragment.
 */
export async function appendLine(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const last = await lastByte(path);
  await appendFile(path, `${last === undefined || last === '\n' ? '' : '\n'}${text}\n`, { flush: true });
}

async function lastByte(path: string): Promise<string | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'r');
    const { size } = await handle.stat();
    if (size === 0) return undefined;
    const { buffer } = await handle.read(Buffer.alloc(1), 0, 1, size - 1);
    return buffer.toString('utf8');
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}
