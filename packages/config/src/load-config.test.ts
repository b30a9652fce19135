import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { loadConfig } from './load-config.js';
import { parseConfig } from './parse-config.js';
import { resolveChannel } from './resolve-channel.js';

const SHIPPED_CONFIG = fileURLToPath(new URL('../../../config.toml', import.meta.url));

let cwd: string;

beforeEach(async () => {
  cwd = await mkdtemp(path.join(tmpdir(), 'ebb-config-'));
});

afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (error instanceof ConfigError) return error;
  throw new Error(`expected a ConfigError, got ${String(error)}`);
}

describe('loadConfig', () => {
  it('uses built-in defaults when ./config.toml is absent and no path is given', async () => {
    const config = await loadConfig({ cwd, env: {} });
    expect(config.file).toBeNull();
    expect(config.channels).toEqual([]);
    // The default working size: 12,000 tokens of (128,000 - 4,096).
    expect(resolveChannel(config, 'web:1').compaction).toMatchObject({
      workingTokens: 12_000,
      backgroundThreshold: 12_000 / 123_904,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads ./config.toml from the working directory and names it relative in errors', async () => {
    await writeFile(path.join(cwd, 'config.toml'), '[compaction]\nprotect_recent = 4\n');
    const config = await loadConfig({ cwd, env: {} });
    expect(config.file).toBe(path.join(cwd, 'config.toml'));
    expect(resolveChannel(config, 'web:1').compaction.protectRecent).toBe(4);

    await writeFile(path.join(cwd, 'config.toml'), '[compaction]\nprotect_recent = -4\n');
    const error = await rejection(loadConfig({ cwd, env: {} }));
    expect(error.message).toBe('config.toml: compaction.protect_recent: must be an integer >= 0; found -4');
  });

  it('fails, naming the file, when an explicit path does not exist', async () => {
    const error = await rejection(loadConfig({ cwd, path: 'missing.toml', env: {} }));
    expect(error.code).toBe('config_not_found');
    expect(error.issues).toEqual([
      {
        file: 'missing.toml',
        path: '',
        rule: `config file not found; looked for ${path.join(cwd, 'missing.toml')}`,
        found: path.join(cwd, 'missing.toml'),
      },
    ]);
    expect(error.message).toContain('missing.toml: config file not found');
  });

  it('fails when EBB_CONFIG names a file that does not exist', async () => {
    const error = await rejection(loadConfig({ cwd, env: { EBB_CONFIG: '/nonexistent/ebb.toml' } }));
    expect(error.code).toBe('config_not_found');
    expect(error.message).toBe(
      '/nonexistent/ebb.toml: config file not found (from EBB_CONFIG); looked for /nonexistent/ebb.toml',
    );
  });

  it('reads EBB_CONFIG, and an explicit path wins over it', async () => {
    await mkdir(path.join(cwd, 'etc'));
    await writeFile(path.join(cwd, 'etc', 'env.toml'), '[bot]\nrespond_to = "all"\n');
    await writeFile(path.join(cwd, 'etc', 'flag.toml'), '[memory]\nscope = "workspace"\n');

    const fromEnv = await loadConfig({ cwd, env: { EBB_CONFIG: 'etc/env.toml' } });
    expect(fromEnv.file).toBe(path.join(cwd, 'etc', 'env.toml'));
    expect(resolveChannel(fromEnv, 'web:1').bot.respondTo).toBe('all');

    const fromFlag = await loadConfig({ cwd, path: 'etc/flag.toml', env: { EBB_CONFIG: 'etc/env.toml' } });
    expect(fromFlag.file).toBe(path.join(cwd, 'etc', 'flag.toml'));
    expect(resolveChannel(fromFlag, 'web:1').bot.respondTo).toBe('mentions');
  });

  it('names an unreadable file', async () => {
    const error = await rejection(loadConfig({ cwd, path: '.', env: {} }));
    expect(error.code).toBe('config_unreadable');
    expect(error.message).toContain('config file cannot be read');
  });

  it('accepts the shipped config.toml, whose channel examples are comments that work once uncommented', async () => {
    const shipped = await loadConfig({ path: SHIPPED_CONFIG, env: {} });
    // No live block for a team or guild the user does not have.
    expect(shipped.channels).toHaveLength(0);
    const defaults = resolveChannel(shipped, 'web:1');
    expect(defaults.compaction).toMatchObject({
      workingTokens: 12_000,
      backgroundThreshold: 12_000 / 123_904,
      aggressiveThreshold: 0.85,
      emergencyThreshold: 0.95,
      protectRecent: 10,
      summaryMaxTokens: 1200,
    });

    // The examples, uncommented as a user would: the lines from the first commented [channels."…"].
    const text = readFileSync(SHIPPED_CONFIG, 'utf8');
    const from = text.indexOf('# [channels.');
    const uncommented = `${text.slice(0, from)}${text
      .slice(from)
      .split('\n')
      .map((line) => (/^# (\[channels\.|[a-z_]+ = )/.test(line) ? line.slice(2) : line))
      .join('\n')}`;
    const config = parseConfig(uncommented, 'config.toml');
    expect(config.channels).toHaveLength(2);
    const support = resolveChannel(config, 'slack:T024BE7LD:C024BE91L:1700000000.1234');
    expect(support.compaction.workingTokens).toBe(24_000);
    expect(support.compaction.backgroundThreshold).toBe(24_000 / 123_904);
    expect(support.sources['compaction.working_tokens']).toBe('[channels."slack:T024BE7LD:C024BE91L*"]');
    const guild = resolveChannel(config, 'discord:123456789012345678:42');
    expect(guild.llm.contextWindow).toBeLessThan(128_000);
    expect(guild.compaction.summaryMaxTokens).toBeLessThan(4096);
    expect(guild.price).toBeDefined();
  });

  it('takes a small window in the shipped file: no example channel holds it back', () => {
    const text = readFileSync(SHIPPED_CONFIG, 'utf8').replace(
      /^context_window = \d+$/m,
      'context_window = 8000',
    );
    expect(text).toMatch(/^context_window = 8000$/m);
    expect(resolveChannel(parseConfig(text, 'config.toml'), 'web:1').llm.contextWindow).toBe(8000);
  });
});
