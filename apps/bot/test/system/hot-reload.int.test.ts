/**
 * Hot reload on a running bot: an edit of config.toml applies to the next turn without a restart,
 * and an invalid edit leaves the running config in place.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, loadEnv } from '@ebb/config';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { randomPrefix } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterAll, expect, it, vi } from 'vitest';
import { watchConfig } from '../../src/commands/reload.js';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';

const closers: (() => Promise<unknown> | unknown)[] = [];
/** The watcher's log lines: each reload outcome is one (`config.reloaded`, `config.rejected`). */
const watcherLog = new RecordingLogger();
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

it('applies a valid edit to the next turn and keeps the running config on an invalid one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ebb-hot-'));
  const file = join(dir, 'config.toml');
  writeFileSync(file, '[bot]\nrespond_to = "mentions"\n');
  const fresh = await freshSchemaDb();
  closers.push(() => fresh.close());
  const reloading = watchConfig(await loadConfig({ path: file }), watcherLog);
  closers.push(() => reloading.stop());
  const ebb: RunningEbb = await startEbb({
    config: reloading.current,
    env: loadEnv({ EBB_REDIS_PREFIX: randomPrefix(), REDIS_URL: 'redis://127.0.0.1:1' }),
    logger: createLogger({ level: 'silent' }),
    withWorker: false,
    webPort: 0,
    database: fresh.database,
  });
  closers.push(() => ebb.close());
  let n = 0;
  const post = async (text: string) => {
    const res = await fetch(`${ebb.web.url}/api/channels/hot/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: 'ana', text, id: `m${++n}` }),
    });
    return ((await res.json()) as { reply: string | null }).reply;
  };

  expect(await post('no mention here')).toBeNull();
  writeFileSync(file, '[bot]\nrespond_to = "all"\n');
  await vi.waitFor(() => expect(reloading.current().sections.bot?.respond_to).toBe('all'), {
    timeout: 5_000,
  });
  expect(await post('still no mention')).toMatch(/^\[offline mode/);

  // An invalid file is rejected: the bot keeps answering with the config it had. The watcher read
  // the invalid file first (its rejection is logged), so "still all" is not a watcher that never looked.
  expect(watcherLog.events('config.rejected')).toEqual([]);
  writeFileSync(file, '[bot]\nrespond_to = "sometimes"\n');
  await vi.waitFor(
    () =>
      expect(watcherLog.events('config.rejected')).toContainEqual(
        expect.objectContaining({
          fields: expect.objectContaining({ error: expect.stringContaining('sometimes') }),
        }),
      ),
    { timeout: 5_000 },
  );
  expect(reloading.current().sections.bot?.respond_to).toBe('all');
  expect(await post('and now?')).toMatch(/^\[offline mode/);
}, 60_000);
