import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ConfigWatcher, type ReloadOutcome } from './config-watcher.js';
import { loadConfig } from './load-config.js';
import { resolveChannel } from './resolve-channel.js';

describe('ConfigWatcher', () => {
  it('applies a valid edit, reports what changed, and rejects an invalid one keeping the old config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ebb-reload-'));
    const file = join(dir, 'config.toml');
    writeFileSync(file, '[compaction]\nbackground_threshold = 0.7\n');
    const outcomes: ReloadOutcome[] = [];
    const watcher = new ConfigWatcher({
      file,
      initial: await loadConfig({ path: file }),
      onReload: (o) => outcomes.push(o),
      debounceMs: 20,
    });
    watcher.start();
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
});
