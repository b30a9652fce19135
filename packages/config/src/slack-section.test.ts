import { describe, expect, it } from 'vitest';
import { parseConfig } from './parse-config.js';

describe('[slack] api_url', () => {
  it('is unset by default and takes an http(s) URL', () => {
    expect(parseConfig('', 'config.toml').slack.api_url).toBeUndefined();
    const config = parseConfig('[slack]\napi_url = "https://slack-proxy.corp.example/api/"\n', 'config.toml');
    expect(config.slack.api_url).toBe('https://slack-proxy.corp.example/api/');
  });

  it('refuses anything but an http(s) URL, naming the key', () => {
    expect(() => parseConfig('[slack]\napi_url = "ftp://slack.example/api/"\n', 'config.toml')).toThrow(
      /slack\.api_url[\s\S]*must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => parseConfig('[slack]\napi_url = "slack.com/api"\n', 'config.toml')).toThrow(
      /slack\.api_url/,
    );
  });
});
