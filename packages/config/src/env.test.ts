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
      loadEnv({ LOG_LEVEL: 'loud', EBB_METRICS_PORT: 'ninety' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('LOG_LEVEL');
    expect((error as ConfigError).message).toContain('EBB_METRICS_PORT');
    expect((error as ConfigError).issues.find((i) => i.path === 'EBB_METRICS_PORT')?.found).toBe('(hidden)');
  });

  it("binds ebb worker's metrics to loopback unless EBB_METRICS_HOST says otherwise", () => {
    expect(loadEnv({}).EBB_METRICS_HOST).toBe('127.0.0.1');
    expect(loadEnv({ EBB_METRICS_HOST: '' }).EBB_METRICS_HOST).toBe('127.0.0.1');
    expect(loadEnv({ EBB_METRICS_HOST: '0.0.0.0' }).EBB_METRICS_HOST).toBe('0.0.0.0');
  });

  it('treats an empty variable as unset', () => {
    const env = loadEnv({ OPENAI_API_KEY: '', DATABASE_URL: '', LOG_LEVEL: '' });
    expect([env.OPENAI_API_KEY, env.DATABASE_URL, env.LOG_LEVEL]).toEqual([undefined, undefined, 'info']);
  });
});
