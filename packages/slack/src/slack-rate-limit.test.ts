/**
 * What `send` does when Slack answers HTTP 429: the adapter's `WebClient` (the real one, against
 * FakeSlack's scripted rate limits) sleeps `Retry-After`, then retries within the adapter's
 * `retryConfig` (3 retries, with its own backoff after the sleep). Waits are measured from the
 * times FakeSlack recorded the calls, with generous margins.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { GENERAL as GENERAL_ID, startHarness, stopHarnesses, TEAM } from '../test/slack-adapter-harness.js';
import { slackChannelKey } from './channel-key.js';

const GENERAL = slackChannelKey({ teamId: TEAM, channelId: GENERAL_ID });

afterEach(stopHarnesses);

describe('SlackAdapter send under rate limits', () => {
  it('waits out Retry-After after a 429 and then posts the message once', async () => {
    const { slack, adapter } = await startHarness('http');
    // 2 s, longer than WebClient's own first backoff (0.5-1 s), so a client that ignored the header fails.
    slack.rateLimit('chat.postMessage', { times: 1, retryAfterSeconds: 2 });

    const sent = await adapter.send(GENERAL, 'hello');

    const posts = slack.callsTo('chat.postMessage');
    expect(posts.map((c) => c.status)).toEqual([429, 200]);
    expect(posts[1]?.response.ts).toBe(sent.platformMessageId);
    expect(slack.messages.map((m) => m.text)).toEqual(['hello']);
    const [refused, retried] = posts.map((c) => c.at);
    expect((retried ?? 0) - (refused ?? 0)).toBeGreaterThanOrEqual(0.9 * 2_000);
  }, 15_000);

  it('gives up after 1 + 3 attempts with a retryable slack_send_failed caused by the rate limit', async () => {
    const { slack, adapter } = await startHarness('http');
    // Retry-After 0 keeps this short (WebClient's backoff alone is 3.5-7 s); the wait is measured above.
    slack.rateLimit('chat.postMessage', { times: Number.POSITIVE_INFINITY, retryAfterSeconds: 0 });

    const failure = await adapter.send(GENERAL, 'hello').then(
      () => undefined,
      (err: unknown) => err,
    );

    expect(failure).toMatchObject({ name: 'SlackError', code: 'slack_send_failed', retryable: true });
    const cause = (failure as { cause?: unknown }).cause;
    expect(cause).toBeInstanceOf(Error);
    expect((cause as Error).message).toMatch(/rate limit was exceeded/);
    expect(slack.callsTo('chat.postMessage').map((c) => c.status)).toEqual([429, 429, 429, 429]);
    expect(slack.messages).toEqual([]);
  }, 30_000);
});
