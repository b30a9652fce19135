/**
 * The adapters' own defaults are what a `config.toml` that says nothing gives them: a WebAdapter or
 * SlackAdapter built without the config (tests, benchmarks) behaves as Ebb does out of the box.
 */
import { loadEnv, parseConfig } from '@ebb/config';
import { DEFAULT_SERVE_OPTIONS } from '@ebb/observability';
import { DEFAULT_SLACK_ADAPTER } from '@ebb/slack';
import { DEFAULT_RATE_LIMIT, DEFAULT_WEB_ADAPTER } from '@ebb/web';
import { expect, it } from 'vitest';

it("the adapters' defaults equal config.toml's", () => {
  const { web } = parseConfig('', 'defaults.toml');
  expect({
    host: DEFAULT_WEB_ADAPTER.host,
    port: DEFAULT_WEB_ADAPTER.port,
    webBodyBytes: DEFAULT_WEB_ADAPTER.maxBodyBytes,
    slackBodyBytes: DEFAULT_SLACK_ADAPTER.maxBodyBytes,
    rateLimit: [DEFAULT_RATE_LIMIT.perMinute, DEFAULT_RATE_LIMIT.burst],
    webRateLimit: [DEFAULT_WEB_ADAPTER.rateLimit.perMinute, DEFAULT_WEB_ADAPTER.rateLimit.burst],
  }).toEqual({
    host: web.host,
    port: web.port,
    webBodyBytes: web.max_body_kb * 1024,
    slackBodyBytes: web.max_body_kb * 1024,
    rateLimit: [web.rate_limit_per_minute, web.rate_limit_burst],
    webRateLimit: [web.rate_limit_per_minute, web.rate_limit_burst],
  });
});

it("ebb worker's metrics server listens where the environment's default says", () => {
  expect(loadEnv({}).EBB_METRICS_HOST).toBe(DEFAULT_SERVE_OPTIONS.host);
});
