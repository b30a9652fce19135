import { describe, expect, it } from 'vitest';
import { isOffline, openAiClient } from './openai-client.js';

describe('isOffline', () => {
  it('is offline with neither a key nor a server, online with either', () => {
    expect(isOffline({ apiKey: undefined, baseUrl: undefined })).toBe(true);
    expect(isOffline({ apiKey: 'sk-1', baseUrl: undefined })).toBe(false);
    expect(isOffline({ apiKey: undefined, baseUrl: 'http://127.0.0.1:8000/v1' })).toBe(false);
    expect(isOffline({ apiKey: 'sk-1', baseUrl: 'http://127.0.0.1:8000/v1' })).toBe(false);
  });
});

describe('openAiClient', () => {
  it('talks to the server with no retries of its own, and a placeholder key for a keyless server', () => {
    const local = openAiClient({ apiKey: undefined, baseUrl: 'http://127.0.0.1:8000/v1' });
    expect(local.baseURL).toBe('http://127.0.0.1:8000/v1');
    expect(local.maxRetries).toBe(0);
    expect(local.apiKey).toBe('not-needed');
    const hosted = openAiClient({ apiKey: 'sk-1', baseUrl: undefined });
    expect(hosted.apiKey).toBe('sk-1');
  });
});
