import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { loadEnv } from './env.js';

describe('loadEnv', () => {
  it('reads connection strings and secrets, with defaults for the rest', () => {
    const env = loadEnv({ DATABASE_URL: 'postgres://x@h/db', OPENAI_API_KEY: 'sk-test' });
    expect(env).toMatchObject({
      DATABASE_URL: 'postgres://x@h/db',
      OPENAI_API_KEY: 'sk-test',
      EBB_DATA_DIR: './.ebb',
      LOG_LEVEL: 'info',
    });
    expect(env.REDIS_URL).toBeUndefined();
  });

  it('names a bad variable without echoing secrets', () => {
    let error: unknown;
    try {
      loadEnv({ LOG_LEVEL: 'loud', OPENAI_API_KEY: '' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('LOG_LEVEL');
    expect((error as ConfigError).message).toContain('OPENAI_API_KEY');
    expect((error as ConfigError).issues.find((i) => i.path === 'OPENAI_API_KEY')?.found).toBe('(hidden)');
  });
});
