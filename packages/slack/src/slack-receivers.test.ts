/**
 * The two receivers through the SlackAdapter: the Events API (listening, url_verification, signature
 * and replay checks, retries, the body limit) and Socket Mode (app token, acks, reconnects), and how
 * each stops.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SIGNING_SECRET, startHarness, stopHarnesses } from '../test/slack-adapter-harness.js';

afterEach(stopHarnesses);

describe('SlackAdapter over the Events API', () => {
  it('listens on the requested host and a free port', async () => {
    const h = await startHarness('http');

    expect(h.adapter.eventsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/slack\/events$/);
    expect(h.adapter.eventsUrl).not.toMatch(/:0\//);
  });

  it('answers the url_verification challenge Slack sends when the URL is configured', async () => {
    const h = await startHarness('http');

    const response = await h.slack.sendUrlVerification(h.adapter.eventsUrl ?? '', 'challenge-3eZbrw1aBm2r', {
      signingSecret: SIGNING_SECRET,
    });

    expect(response).toMatchObject({ status: 200, json: { challenge: 'challenge-3eZbrw1aBm2r' } });
  });

  it('rejects a forged signature with 401 and never calls the handler', async () => {
    const h = await startHarness('http');
    const event = h.slack.build.channelMessage({ text: 'let me in' });

    const response = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
      forgeSignature: true,
    });

    expect(response.status).toBe(401);
    expect(h.handlers.messages).toEqual([]);
    expect(h.log.ignored(event.ts)).toEqual([]);
  });

  it('rejects a request signed more than five minutes ago with 401', async () => {
    const h = await startHarness('http');
    const event = h.slack.build.channelMessage({ text: 'replayed' });

    const response = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
      timestamp: Math.floor(Date.now() / 1000) - 6 * 60,
    });

    expect(response.status).toBe(401);
    expect(h.handlers.messages).toEqual([]);
  });

  it('acknowledges a retry at once with 200', async () => {
    const h = await startHarness('http');
    const event = h.slack.build.channelMessage({ text: 'once' });

    const first = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
    });
    const retry = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
      retryNum: 1,
      retryReason: 'http_timeout',
    });

    expect([first.status, retry.status]).toEqual([200, 200]);
    await vi.waitFor(() => expect(h.log.ignored(event.ts)).toEqual(['duplicate']));
    expect(h.handlers.messages).toHaveLength(1);
  });

  it('answers 413 to a body over maxBodyBytes, signed or not, and calls nothing', async () => {
    const h = await startHarness('http', { maxBodyBytes: 4096 });
    const event = h.slack.build.channelMessage({ text: 'x'.repeat(8_000) });

    const signed = await h.slack.sendEvent(h.adapter.eventsUrl ?? '', event, {
      signingSecret: SIGNING_SECRET,
    });
    const unsigned = await fetch(h.adapter.eventsUrl ?? '', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(1_000_000),
    });

    expect([signed.status, unsigned.status]).toEqual([413, 413]);
    // Declared over the limit: the connection is closed after the answer, not drained of the rest.
    expect(unsigned.headers.get('connection')).toBe('close');
    expect(h.handlers.messages).toEqual([]);
    // Below the limit, the same kind of message goes through.
    const small = h.slack.build.channelMessage({ text: 'x'.repeat(1_000) });
    expect(
      (await h.slack.sendEvent(h.adapter.eventsUrl ?? '', small, { signingSecret: SIGNING_SECRET })).status,
    ).toBe(200);
  });

  it('stops listening on stop', async () => {
    const h = await startHarness('http');
    const url = h.adapter.eventsUrl ?? '';

    await h.adapter.stop();

    await expect(fetch(url, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});

describe('SlackAdapter over Socket Mode', () => {
  it('opens the connection with the app token and acks every envelope', async () => {
    const h = await startHarness('socket');

    expect(h.slack.callsTo('apps.connections.open').map((c) => c.tokenKind)).toEqual(['app']);
    const id = h.slack.deliver(h.slack.build.channelMessage({ text: 'hi' }));
    await vi.waitFor(() => expect(h.slack.ackFor(id)).toEqual({ envelopeId: id, payload: {} }));
  });

  it.each(['terminate', 'close', 'refresh'] as const)(
    'reconnects after the connection is dropped (%s) and keeps delivering',
    async (how) => {
      const h = await startHarness('socket');
      await h.deliver(h.slack.build.channelMessage({ text: 'before' }));
      await vi.waitFor(() => expect(h.handlers.messages).toHaveLength(1));

      h.slack.dropConnections(how);

      await vi.waitFor(() => {
        expect(h.slack.socketConnections).toBe(2);
        expect(h.slack.openSockets).toBe(1);
      });
      await h.deliver(h.slack.build.channelMessage({ text: 'after' }));
      await vi.waitFor(() => expect(h.handlers.messages.map((m) => m.text)).toEqual(['before', 'after']));
      expect(h.slack.callsTo('apps.connections.open')).toHaveLength(2);
    },
  );

  it('closes the connection on stop', async () => {
    const h = await startHarness('socket');
    expect(h.slack.openSockets).toBe(1);

    await h.adapter.stop();

    await vi.waitFor(() => expect(h.slack.openSockets).toBe(0));
  });
});
