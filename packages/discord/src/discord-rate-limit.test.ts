/**
 * What `send` does when Discord answers HTTP 429, with the real discord.js REST client against
 * FakeDiscord's scripted rate limits. @discordjs/rest marks the bucket limited until
 * `X-RateLimit-Reset-After` (plus its 50 ms offset) and sends again; a 429 never counts against its
 * `retries`. Waits are measured from the times FakeDiscord recorded the requests, with generous margins.
 */
import type { RecordedDiscordRequest } from '@ebb/testing/discord';
import { describe, expect, it } from 'vitest';
import { setup } from '../test/discord-adapter-harness.js';
import { discordChannelKey } from './channel-key.js';

/** The harness's adapter, with the general channel's key and its create-message requests. */
async function setupPosts() {
  const { fake, adapter, general } = await setup();
  const key = discordChannelKey(fake.guild.id, general.id, null);
  const posts = (): readonly RecordedDiscordRequest[] =>
    fake.requests.filter((r) => r.method === 'POST' && r.route === `/channels/${general.id}/messages`);
  return { fake, adapter, key, posts };
}

/** Milliseconds between consecutive requests. */
function gaps(requests: readonly RecordedDiscordRequest[]): number[] {
  return requests.slice(1).map((r, i) => r.at - (requests[i]?.at ?? r.at));
}

describe('DiscordAdapter send under rate limits', () => {
  it('waits out Retry-After after two 429s on create-message and then posts once', async () => {
    const { fake, adapter, key, posts } = await setupPosts();
    fake.rateLimit({ method: 'POST', route: 'channels/:id/messages', times: 2, retryAfterSeconds: 1 });

    const sent = await adapter.send(key, 'hello');

    expect(posts().map((r) => r.status)).toEqual([429, 429, 200]);
    expect(fake.posted.map((m) => [m.id, m.content])).toEqual([[sent.platformMessageId, 'hello']]);
    for (const gap of gaps(posts())) expect(gap).toBeGreaterThanOrEqual(0.9 * 1_000);
  }, 15_000);

  it('waits out more 429s than its retry budget: discord.js does not count them against retries', async () => {
    const { fake, adapter, key, posts } = await setupPosts();
    fake.rateLimit({ method: 'POST', route: 'channels/:id/messages', times: 5, retryAfterSeconds: 0.2 });

    await adapter.send(key, 'hello');

    expect(posts().map((r) => r.status)).toEqual([429, 429, 429, 429, 429, 200]);
    expect(fake.posted.map((m) => m.content)).toEqual(['hello']);
    for (const gap of gaps(posts())) expect(gap).toBeGreaterThanOrEqual(0.9 * 200);
  }, 15_000);

  it('waits out a global 429 before sending again', async () => {
    const { fake, adapter, key, posts } = await setupPosts();
    fake.rateLimit({ method: 'POST', route: 'channels/:id/messages', scope: 'global', retryAfterSeconds: 1 });

    await adapter.send(key, 'hello');

    expect(posts().map((r) => r.status)).toEqual([429, 200]);
    expect(fake.posted.map((m) => m.content)).toEqual(['hello']);
    for (const gap of gaps(posts())) expect(gap).toBeGreaterThanOrEqual(0.9 * 1_000);
  }, 15_000);
});
