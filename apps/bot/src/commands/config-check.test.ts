import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configCheck } from './config-check.js';

let cwd: string;

beforeEach(async () => {
  cwd = await mkdtemp(path.join(tmpdir(), 'ebb-config-check-'));
});

afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

async function run(args: { config?: string; channel?: string }, env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await configCheck(
    args,
    { out: (line) => out.push(line), err: (line) => err.push(line) },
    { cwd, env },
  );
  return { code, out, err };
}

/** The header: the lines before the settings table. */
function header(out: readonly string[]): readonly string[] {
  return out.slice(0, out.indexOf(''));
}

const ADMIN_TOKEN = 'c0ffee-s3cret-admin-token-4242';

describe('ebb config check', () => {
  it('prints the file, the channel and every resolved setting with its source, and exits 0', async () => {
    await writeFile(
      path.join(cwd, 'ebb.toml'),
      '[compaction]\nprotect_recent = 4\n[channels."slack:T1:*".compaction]\nbackground_threshold = 0.7\n',
    );
    const { code, out, err } = await run({ config: 'ebb.toml', channel: 'slack:T1:C1' });

    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(out[0]).toBe('config:  ebb.toml');
    expect(out[1]).toBe('channel: slack:T1:C1');
    expect(out[2]).toBe('layers:  default < [compaction] < [channels."slack:T1:*"]');
    const table = out.slice(out.indexOf('') + 1);
    expect(table[0]).toMatch(/^setting\s+value\s+source$/);
    expect(table).toHaveLength(46);
    const row = (key: string) => table.find((line) => line.startsWith(`${key} `))?.split(/\s{2,}/);
    expect(row('compaction.working_fraction')).toEqual(['compaction.working_fraction', '0.7', 'default']);
    expect(row('privacy.on_delete')).toEqual(['privacy.on_delete', '"redact"', 'default']);
    expect(row('privacy.on_edit')).toEqual(['privacy.on_edit', '"update"', 'default']);
    expect(row('privacy.retain_days')).toEqual(['privacy.retain_days', '(unset)', 'default']);
    expect(row('compaction.background_threshold')).toEqual([
      'compaction.background_threshold',
      '0.7',
      '[channels."slack:T1:*"]',
    ]);
    expect(row('compaction.protect_recent')).toEqual(['compaction.protect_recent', '4', '[compaction]']);
    expect(row('llm.model')).toEqual(['llm.model', '"gpt-5.4-mini"', 'default']);
    expect(row('compaction.summary_max_tokens')).toEqual([
      'compaction.summary_max_tokens',
      '1200',
      'default (min(4096, 8% of llm.context_window, 10% of compaction.working_tokens))',
    ]);
    expect(row('llm.base_url')?.[1]).toBe('(unset)');
    const sourceColumn = table[0]?.indexOf('source') ?? -1;
    for (const line of table) expect(line.slice(sourceColumn - 2, sourceColumn + 1)).toMatch(/^ {2}\S$/);
  });

  it('prints where the web server listens and that EBB_ADMIN_TOKEN is unset', async () => {
    const { code, out } = await run({});
    expect(code).toBe(0);
    expect(header(out).slice(3)).toEqual([
      'web:     http://127.0.0.1:3000 (dashboard, API, /metrics, /healthz)',
      'admin:   EBB_ADMIN_TOKEN is not set: only clients on this machine are answered',
    ]);
  });

  it('says EBB_ADMIN_TOKEN is set without ever printing it', async () => {
    await writeFile(path.join(cwd, 'config.toml'), '[web]\nhost = "0.0.0.0"\nport = 8080\n');
    const { code, out, err } = await run({}, { EBB_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(code).toBe(0);
    expect(header(out).slice(3)).toEqual([
      'web:     http://0.0.0.0:8080 on every interface (dashboard, API, /metrics, /healthz)',
      'admin:   EBB_ADMIN_TOKEN is set: every route but /healthz needs it',
    ]);
    expect([...out, ...err].join('\n')).not.toContain(ADMIN_TOKEN.slice(0, 8));
  });

  it('refuses an environment ebb start would refuse, naming the variable and never its value', async () => {
    const short = 'tooShort-12345';
    const { code, out, err } = await run({}, { EBB_ADMIN_TOKEN: short });
    expect(code).toBe(1);
    expect(err.join('\n')).toMatch(/EBB_ADMIN_TOKEN: must be at least 16 characters/);
    expect(err.at(-1)).toBe('config check failed: the environment ebb start would read is refused');
    expect([...out, ...err].join('\n')).not.toContain(short);
  });

  it('warns, as ebb start would refuse, of a host beyond loopback without the token (exit 0)', async () => {
    await writeFile(path.join(cwd, 'config.toml'), '[web]\nhost = "0.0.0.0"\n');
    // An empty variable is unset, as for the start.
    const { code, out } = await run({}, { EBB_ADMIN_TOKEN: '' });
    expect(code).toBe(0);
    expect(header(out).slice(4)).toEqual([
      'admin:   EBB_ADMIN_TOKEN is not set: only clients on this machine are answered',
      expect.stringMatching(
        /^warning: ebb start would refuse to start here: \[web\] host = "0\.0\.0\.0" listens beyond this machine, but EBB_ADMIN_TOKEN is not set; set EBB_ADMIN_TOKEN/,
      ),
    ]);
  });

  it('takes any 127.x host for this machine, as the start does', async () => {
    await writeFile(path.join(cwd, 'config.toml'), '[web]\nhost = "127.0.0.2"\n');
    const { code, out } = await run({});
    expect(code).toBe(0);
    expect(header(out).slice(3)).toEqual([
      'web:     http://127.0.0.2:3000 (dashboard, API, /metrics, /healthz)',
      'admin:   EBB_ADMIN_TOKEN is not set: only clients on this machine are answered',
    ]);
  });

  it('warns of [web] public_api and brackets an IPv6 host', async () => {
    await writeFile(path.join(cwd, 'config.toml'), '[web]\nhost = "::1"\npublic_api = true\n');
    const { code, out } = await run({});
    expect(code).toBe(0);
    expect(header(out)[3]).toBe('web:     http://[::1]:3000 (dashboard, API, /metrics, /healthz)');
    expect(header(out)[5]).toMatch(
      /^warning: \[web\] public_api = true: anyone who reaches ::1:3000 can post messages/,
    );
  });

  it('says so when it runs on built-in defaults', async () => {
    const { code, out } = await run({});
    expect(code).toBe(0);
    expect(out[0]).toBe('config:  built-in defaults (no config.toml found)');
    expect(out[1]).toMatch(/^channel: defaults\b/);
  });

  it('prints every problem to err and exits 1 for an invalid file', async () => {
    await writeFile(
      path.join(cwd, 'config.toml'),
      '[compaction]\nbackground_threshold = 0.9\nbackgrond_fraction = 0.3\n',
    );
    const { code, out, err } = await run({});
    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err).toEqual([
      'config.toml: compaction.backgrond_fraction: unknown key (did you mean background_fraction?)',
      'config.toml: compaction.background_threshold: must be below aggressive_threshold (0.85, default); found 0.9',
      'config check failed: 2 problems',
    ]);
  });

  it('exits 1 when an explicit file is missing', async () => {
    const { code, err } = await run({ config: 'nope.toml' });
    expect(code).toBe(1);
    expect(err[0]).toMatch(/^nope\.toml: config file not found/);
  });

  it('exits 1 when overlapping patterns combine into broken settings for the channel asked about', async () => {
    await writeFile(
      path.join(cwd, 'config.toml'),
      '[channels."slack:T1:*".compaction]\naggressive_threshold = 0.82\n[channels."slack:*:C1".compaction]\nbackground_threshold = 0.83\n',
    );
    expect((await run({ channel: 'slack:T1:C2' })).code).toBe(0);
    const { code, err } = await run({ channel: 'slack:T1:C1' });
    expect(code).toBe(1);
    expect(err[0]).toBe(
      'config.toml: channels."slack:*:C1".compaction.background_threshold: must be below aggressive_threshold (0.82, from [channels."slack:T1:*"]) in the merged settings for channel slack:T1:C1; found 0.83',
    );
  });

  it('refuses a window whose reserve leaves a pass nothing to free, naming the keys to change', async () => {
    // A small window the file alone accepts: only the system prompt and tools, counted with the
    // model's tokenizer, leave a background pass too little of the conversation.
    await writeFile(
      path.join(cwd, 'config.toml'),
      '[llm]\ncontext_window = 4000\nmax_output_tokens = 500\n[memory]\nrecall_max_tokens = 1000\n[web.compaction]\nbackground_threshold = 0.6\n',
    );
    expect((await run({ channel: 'slack:T1:C1' })).code).toBe(0);
    const { code, err } = await run({ channel: 'web:w1' });
    expect(code).toBe(1);
    expect(err[0]).toMatch(
      /^config\.toml: web\.compaction\.background_threshold: leaves a background pass nothing to free in the merged settings for channel web:w1: at background_threshold \(0\.6, from \[web\]\), .* less the reserve \(memory\.recall_max_tokens \(1000, from \[memory\]\) \+ the system prompt and tools \(\d+\)\) leave \d+ of conversation; .* so it needs \d+\. Raise llm\.context_window or compaction\.background_threshold, or lower llm\.max_output_tokens, memory\.recall_max_tokens, compaction\.summary_max_tokens or compaction\.protect_recent \(or shorten bot\.system_prompt, or allow fewer tools\); found 0\.6$/,
    );
    // The new user's channel: a 4,000-token window at 0.70 leaves a pass room, and is accepted
    // (counted in bytes it would not be: the check then counts with the model's tokenizer).
    await writeFile(
      path.join(cwd, 'config.toml'),
      '[llm]\ncontext_window = 4000\nmax_output_tokens = 500\n[memory]\nrecall_max_tokens = 1000\n[web.compaction]\nbackground_threshold = 0.7\n',
    );
    expect((await run({ channel: 'web:w1' })).code).toBe(0);
  });
});
