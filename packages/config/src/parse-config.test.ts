import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { parseConfig } from './parse-config.js';
import { resolveChannel, retentionConfigured } from './resolve-channel.js';

function configError(text: string): ConfigError {
  try {
    parseConfig(text, 'config.toml');
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('parseConfig', () => {
  it('takes [privacy] retain_days per channel, and names the key of one that is not a whole number of days', () => {
    const config = parseConfig(
      '[privacy]\nretain_days = 365\n[channels."slack:T1:CHR".privacy]\nretain_days = 30\n',
      'config.toml',
    );
    expect(resolveChannel(config, 'slack:T1:CHR').privacy.retainDays).toBe(30);
    expect(resolveChannel(config, 'slack:T1:COTHER').privacy.retainDays).toBe(365);
    expect(resolveChannel(parseConfig('', 'config.toml'), 'web:x').privacy.retainDays).toBeUndefined();
    expect(retentionConfigured(config)).toBe(true);
    expect(retentionConfigured(parseConfig('[slack.privacy]\nretain_days = 7\n', 'config.toml'))).toBe(true);
    expect(retentionConfigured(parseConfig('[privacy]\non_delete = "redact"\n', 'config.toml'))).toBe(false);
    const error = configError('[channels."web:*".privacy]\nretain_days = 0.5\n');
    expect(error.issues).toEqual([
      expect.objectContaining({
        file: 'config.toml',
        path: 'channels."web:*".privacy.retain_days',
        found: 0.5,
      }),
    ]);
  });

  it('reports misordered thresholds, an unknown key and a bad fraction in one channel block, all at once', () => {
    const error = configError(`
      [channels."slack:T1:*".compaction]
      background_threshold = 0.9
      backgrond_fraction = 0.3
      emergency_fraction = 1.5
    `);

    expect(error.code).toBe('config_invalid');
    expect(error.issues).toHaveLength(3);
    expect(error.issues).toEqual(
      expect.arrayContaining([
        {
          file: 'config.toml',
          path: 'channels."slack:T1:*".compaction.background_threshold',
          rule: 'must be below aggressive_threshold (0.85, default) in the merged settings for [channels."slack:T1:*"]',
          found: 0.9,
        },
        {
          file: 'config.toml',
          path: 'channels."slack:T1:*".compaction.backgrond_fraction',
          rule: 'unknown key (did you mean background_fraction?)',
          found: 0.3,
        },
        {
          file: 'config.toml',
          path: 'channels."slack:T1:*".compaction.emergency_fraction',
          rule: 'must be a number between 0 and 1 (exclusive)',
          found: 1.5,
        },
      ]),
    );
    const lines = error.message.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines).toContain(
      'config.toml: channels."slack:T1:*".compaction.background_threshold: must be below aggressive_threshold (0.85, default) in the merged settings for [channels."slack:T1:*"]; found 0.9',
    );
    expect(lines).toContain(
      'config.toml: channels."slack:T1:*".compaction.backgrond_fraction: unknown key (did you mean background_fraction?)',
    );
  });

  it('resolves [privacy] at every level and names the file, key and rule of a bad value', () => {
    const config = parseConfig(
      `
      [privacy]
      on_edit = "resummarize"
      [slack.privacy]
      on_delete = "ignore"
      [channels."slack:T1:C9".privacy]
      on_delete = "redact"
      on_edit = "ignore"
    `,
      'config.toml',
    );
    expect(resolveChannel(config, 'web:a').privacy).toEqual({ onDelete: 'redact', onEdit: 'resummarize' });
    expect(resolveChannel(config, 'slack:T1:C1').privacy).toEqual({
      onDelete: 'ignore',
      onEdit: 'resummarize',
    });
    expect(resolveChannel(config, 'slack:T1:C9').privacy).toEqual({ onDelete: 'redact', onEdit: 'ignore' });
    expect(resolveChannel(config, 'slack:T1:C1').sources['privacy.on_delete']).toBe('[slack]');
    const error = configError(`
      [privacy]
      on_delete = "forget"
      [channels."web:*".privacy]
      on_edit = true
    `);
    expect(error.issues).toEqual([
      {
        file: 'config.toml',
        path: 'privacy.on_delete',
        rule: 'must be one of "redact", "ignore"',
        found: 'forget',
      },
      {
        file: 'config.toml',
        path: 'channels."web:*".privacy.on_edit',
        rule: 'must be one of "update", "resummarize", "ignore"',
        found: true,
      },
    ]);
  });

  it('collects problems from every part of the file', () => {
    const error = configError(`
      [llm]
      context_window = "big"
      [compaction]
      protect_recent = -1
      emergency_threshold = 1.2
      [memory]
      scope = "team"
      [web]
      port = 70000
      [slack]
      admins = ["U1", 7]
    `);
    expect(error.issues.map((issue) => [issue.path, issue.rule, issue.found])).toEqual(
      expect.arrayContaining([
        ['llm.context_window', 'must be a positive integer', 'big'],
        ['compaction.protect_recent', 'must be an integer >= 0', -1],
        ['compaction.emergency_threshold', 'must be a number above 0 and at most 1', 1.2],
        ['memory.scope', 'must be one of "channel", "workspace"', 'team'],
        ['web.port', 'must be a port number (1-65535)', 70000],
        ['slack.admins[1]', 'must be a user id', 7],
      ]),
    );
    expect(error.issues).toHaveLength(6);
  });

  it('accepts thresholds up to 1 and rejects fractions at the ends of (0, 1)', () => {
    expect(() => parseConfig('[compaction]\nemergency_threshold = 1\n', 'config.toml')).not.toThrow();
    const error = configError('[compaction]\nbackground_fraction = 1\naggressive_fraction = 0\n');
    expect(error.issues.map((issue) => issue.path)).toEqual([
      'compaction.background_fraction',
      'compaction.aggressive_fraction',
    ]);
  });

  it('points a key written in the wrong table at the right one', () => {
    const error = configError(`
      background_threshold = 0.7
      [slack]
      model = "gpt-4o"
    `);
    expect(error.issues.map((issue) => [issue.path, issue.rule])).toEqual(
      expect.arrayContaining([
        ['background_threshold', 'unknown key (it belongs in [compaction])'],
        ['slack.model', 'unknown key (it belongs in [slack.llm])'],
      ]),
    );
  });

  it('takes [bot] context_cache_mb at the top level only, as a setting of the process', () => {
    expect(parseConfig('', 'config.toml').process).toEqual({ contextCacheMb: 512 });
    const set = parseConfig('[bot]\ncontext_cache_mb = 64\nrespond_to = "all"\n', 'config.toml');
    expect(set.process).toEqual({ contextCacheMb: 64 });
    // It is no channel setting: the channel's [bot] holds only what it had.
    expect(set.sections.bot).toEqual({ respond_to: 'all' });
    expect(resolveChannel(set, 'web:a').bot).not.toHaveProperty('context_cache_mb');

    const error = configError(
      '[bot]\ncontext_cache_mb = 0\n[slack.bot]\ncontext_cache_mb = 64\n[channels."web:*".bot]\ncontext_cache_mb = 64\n',
    );
    expect(error.issues.map((issue) => [issue.path, issue.rule])).toEqual([
      ['bot.context_cache_mb', 'must be a positive integer'],
      ['slack.bot.context_cache_mb', 'a setting of the whole process: set it in the top-level [bot]'],
      [
        'channels."web:*".bot.context_cache_mb',
        'a setting of the whole process: set it in the top-level [bot]',
      ],
    ]);
  });

  it('rejects unknown sections and tables where values belong', () => {
    const error = configError('[compation]\nbackground_threshold = 0.7\n[channels]\n"web:*" = 5\n');
    expect(error.issues.map((issue) => [issue.path, issue.rule])).toEqual([
      ['channels."web:*"', 'must be a table'],
      ['compation', 'unknown key (did you mean compaction?)'],
    ]);
  });

  it('checks cross-field rules on the platform sections merged over the top-level sections', () => {
    const error = configError(
      '[compaction]\nemergency_threshold = 0.9\n[slack.compaction]\naggressive_threshold = 0.92\n',
    );
    expect(error.issues).toEqual([
      {
        file: 'config.toml',
        path: 'slack.compaction.aggressive_threshold',
        rule: 'must be below emergency_threshold (0.9, from [compaction]) in the merged settings for [slack]',
        found: 0.92,
      },
    ]);
  });

  it('merges a pattern block over the less specific blocks that cover all its keys', () => {
    const error = configError(`
      [channels."slack:*".compaction]
      aggressive_threshold = 0.82
      [channels."slack:T1:*".compaction]
      background_threshold = 0.83
      [channels."discord:*".compaction]
      background_threshold = 0.83
    `);
    expect(error.issues).toEqual([
      {
        file: 'config.toml',
        path: 'channels."slack:T1:*".compaction.background_threshold',
        rule: 'must be below aggressive_threshold (0.82, from [channels."slack:*"]) in the merged settings for [channels."slack:T1:*"]',
        found: 0.83,
      },
    ]);
  });

  it('reports a problem once, where it first appears, not again in every place that inherits it', () => {
    const error = configError(`
      [compaction]
      background_threshold = 0.9
      [slack.compaction]
      protect_recent = 4
      [channels."web:*".bot]
      respond_to = "all"
    `);
    expect(error.issues).toEqual([
      {
        file: 'config.toml',
        path: 'compaction.background_threshold',
        rule: 'must be below aggressive_threshold (0.85, default)',
        found: 0.9,
      },
    ]);
  });

  it('checks the token budget of the merged window, naming the key set most specifically', () => {
    const error = configError(`
      [llm]
      context_window = 5000
      [memory]
      recall_max_tokens = 1000
      [channels."web:*".memory]
      recall_max_tokens = 200000
    `);
    expect(error.issues.map((issue) => `${issue.path}: ${issue.rule}`)).toEqual([
      'llm.context_window: must be above max_output_tokens (4096, default) + compaction.summary_max_tokens (400, default) + memory.recall_max_tokens (1000, from [memory]) = 5496',
      'llm.context_window: must be above compaction.message_max_tokens (1250, default) + max_output_tokens (4096, default) = 5346',
      'channels."web:*".memory.recall_max_tokens: must be below llm.context_window (5000, from [llm]) - llm.max_output_tokens (4096, default) - compaction.summary_max_tokens (400, default) = 504 in the merged settings for [channels."web:*"]',
    ]);
  });

  it('refuses a window whose recall budget leaves a background pass nothing to free', () => {
    const error = configError(
      '[llm]\ncontext_window = 2000\nmax_output_tokens = 500\n[memory]\nrecall_max_tokens = 1000\n',
    );
    expect(error.issues.map((issue) => `${issue.path}: ${issue.rule}`)).toEqual([
      'llm.context_window: leaves a background pass nothing to free: at compaction.background_threshold (0.8, default), (context_window (2000, from [llm]) - max_output_tokens (500, from [llm])) × 0.8 = 1200 prompt tokens less the reserve (memory.recall_max_tokens (1000, from [memory])) leave 200 of conversation; a pass must free at least half of compaction.background_fraction (0.3, default) of it besides a summary of up to compaction.summary_max_tokens (160, default) and the compaction.protect_recent (10, default) newest messages (32 tokens each), so it needs 565. Raise llm.context_window or compaction.background_threshold, or lower llm.max_output_tokens, memory.recall_max_tokens, compaction.summary_max_tokens or compaction.protect_recent',
    ]);
    // A smaller recall budget leaves the pass its room.
    expect(() =>
      parseConfig(
        '[llm]\ncontext_window = 2000\nmax_output_tokens = 500\n[memory]\nrecall_max_tokens = 500\n',
        'c.toml',
      ),
    ).not.toThrow();
  });

  it('refuses a working size that leaves a background pass nothing to free, naming it', () => {
    const error = configError(
      '[compaction]\nworking_tokens = 2000\nsummary_max_tokens = 1000\n[memory]\nrecall_max_tokens = 1000\n',
    );
    expect(error.issues.map((issue) => `${issue.path}: ${issue.rule}`)).toEqual([
      'compaction.working_tokens: leaves a background pass nothing to free: at working_tokens (2000, from [compaction]) prompt tokens, less the reserve (memory.recall_max_tokens (1000, from [memory])) leave 1000 of conversation; a pass must free at least half of working_fraction (0.7, default) of it besides a summary of up to summary_max_tokens (1000, from [compaction]) and the protect_recent (10, default) newest messages (32 tokens each), so it needs 2031. Raise compaction.working_tokens, or lower llm.max_output_tokens, memory.recall_max_tokens, compaction.summary_max_tokens or compaction.protect_recent',
    ]);
    // Its default summary (a tenth of it) leaves the pass its room.
    expect(() => parseConfig('[compaction]\nworking_tokens = 2000\n', 'c.toml')).not.toThrow();
  });

  it('checks an explicit message cap against the window left for it', () => {
    const error = configError('[channels."discord:*".compaction]\nmessage_max_tokens = 200000\n');
    expect(error.issues).toHaveLength(1);
    expect(error.issues[0]).toMatchObject({
      path: 'channels."discord:*".compaction.message_max_tokens',
      rule: 'must be below llm.context_window (128000, default) - llm.max_output_tokens (4096, default) = 123904 in the merged settings for [channels."discord:*"]',
      found: 200000,
    });
  });

  it('does not pile a cross-field complaint on top of a value that is already invalid', () => {
    const error = configError('[compaction]\nbackground_threshold = "high"\naggressive_threshold = 0.7\n');
    expect(error.issues.map((issue) => issue.path)).toEqual(['compaction.background_threshold']);
  });

  it('names the line and column of a TOML syntax error', () => {
    const error = configError('[llm]\nmodel = "gpt-4o"\ncontext_window = = 3\n');
    expect(error.issues).toHaveLength(1);
    expect(error.issues[0]).toMatchObject({ file: 'config.toml', line: 3, found: 'context_window = = 3' });
    expect(error.message).toMatch(/^config\.toml:3:\d+: invalid TOML: /);
    expect(error.cause).toBeDefined();
  });

  it('returns a deeply frozen config that keeps every part of the file', () => {
    const config = parseConfig(
      `
      [llm]
      model = "gpt-4.1"
      [prices."gpt-4.1"]
      input_per_mtok = 2
      output_per_mtok = 8
      [slack]
      admins = ["U1"]
      [slack.compaction]
      protect_recent = 3
      [channels."web:*".bot]
      respond_to = "all"
      [channels."slack:*".memory]
      scope = "workspace"
      `,
      'config.toml',
    );
    expect(config.file).toBe('config.toml');
    expect(config.sections).toEqual({ llm: { model: 'gpt-4.1' } });
    expect(config.slack).toEqual({ mode: 'socket', admins: ['U1'], compaction: { protect_recent: 3 } });
    expect(config.web).toEqual({
      host: '127.0.0.1',
      port: 3000,
      public_api: false,
      max_body_kb: 256,
      rate_limit_per_minute: 120,
      rate_limit_burst: 60,
    });
    expect(config.channels.map((block) => block.pattern)).toEqual(['web:*', 'slack:*']);
    expect(config.prices['gpt-4.1']).toEqual({ input_per_mtok: 2, output_per_mtok: 8 });

    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.slack.admins)).toBe(true);
    expect(Object.isFrozen(config.channels[0]?.bot)).toBe(true);
    expect(() => {
      (config.sections.llm as { model: string }).model = 'other';
    }).toThrow(TypeError);
    expect(resolveChannel(config, 'slack:T1:C1').llm.model).toBe('gpt-4.1');
  });
});
