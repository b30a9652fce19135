import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ConfigWatcher, type ReloadOutcome } from './config-watcher.js';
import { loadConfig } from './load-config.js';
import { resolveChannel } from './resolve-channel.js';

/** A started watcher of `file` and the outcomes it reported. */
async function watching(file: string): Promise<{ watcher: ConfigWatcher; outcomes: ReloadOutcome[] }> {
  const outcomes: ReloadOutcome[] = [];
  const watcher = new ConfigWatcher({
    file,
    initial: await loadConfig({ path: file }),
    onReload: (o) => outcomes.push(o),
    debounceMs: 20,
  });
  watcher.start();
  return { watcher, outcomes };
}

describe('ConfigWatcher', () => {
  it('applies a valid edit, reports what changed, and rejects an invalid one keeping the old config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ebb-reload-'));
    const file = join(dir, 'config.toml');
    writeFileSync(file, '[compaction]\nbackground_threshold = 0.7\n');
    const { watcher, outcomes } = await watching(file);
    try {
      writeFileSync(
        file,
        '[compaction]\nworking_tokens = 0\nbackground_threshold = 0.6\n[channels."slack:*".bot]\nrespond_to = "all"\n',
      );
      await vi.waitFor(() => expect(outcomes.at(-1)?.kind).toBe('reloaded'));
      expect(outcomes.at(-1)).toMatchObject({
        changed: expect.arrayContaining(['sections.compaction.background_threshold']),
      });
      expect(resolveChannel(watcher.current(), 'slack:T1:C1')).toMatchObject({
        compaction: { backgroundThreshold: 0.6 },
        bot: { respondTo: 'all' },
      });

      writeFileSync(file, '[compaction]\nbackground_threshold = 0.9\naggressive_threshold = 0.85\n');
      const rejected = await watcher.reload();
      expect(rejected.kind).toBe('rejected');
      expect(rejected.kind === 'rejected' && rejected.error.message).toContain(
        'must be below aggressive_threshold',
      );
      expect(resolveChannel(watcher.current(), 'web:x').compaction.backgroundThreshold).toBe(0.6);
      expect(await watcher.reload()).toMatchObject({ kind: 'rejected' });
    } finally {
      watcher.stop();
    }
  });

  it('reloads a Kubernetes ConfigMap volume, whose update swaps a ..data link and never writes config.toml', async () => {
    // The kubelet's layout: config.toml -> ..data/config.toml, ..data -> ..<timestamp>.
    const dir = mkdtempSync(join(tmpdir(), 'ebb-configmap-'));
    const version = (name: string, toml: string) => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'config.toml'), toml);
    };
    version('..2026_12_04_10_00_00.1', '[compaction]\nworking_tokens = 0\nbackground_threshold = 0.7\n');
    symlinkSync('..2026_12_04_10_00_00.1', join(dir, '..data'));
    symlinkSync(join('..data', 'config.toml'), join(dir, 'config.toml'));
    const file = join(dir, 'config.toml');
    const { watcher, outcomes } = await watching(file);
    try {
      // The update, as the kubelet's atomic writer does it.
      version('..2026_12_04_10_05_00.2', '[compaction]\nworking_tokens = 0\nbackground_threshold = 0.6\n');
      symlinkSync('..2026_12_04_10_05_00.2', join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      await vi.waitFor(() => expect(outcomes.at(-1)?.kind).toBe('reloaded'));
      expect(resolveChannel(watcher.current(), 'web:x').compaction.backgroundThreshold).toBe(0.6);
    } finally {
      watcher.stop();
    }
  });
});
