/**
 * End to end through the web channel: the real HTTP API, the bot, Postgres, BullMQ with a worker in
 * this process, and the fake OpenAI server behind the real openai client (chat and summaries), with
 * a 4,000-token window so its `END_TO_END_MESSAGES` (600) go through every tier several times.
 */
import { resolveChannel } from '@ebb/config';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { loadTokenizer } from '@ebb/llm';
import type { FakeOpenAiServer } from '@ebb/testing/openai';
import { describe, expect, vi } from 'vitest';
import { ebbWorld } from '../ebb-world.js';
import { emergencyTruncations, expectRunsAtTheirThresholds } from '../expect-runs.js';
import {
  END_TO_END_MESSAGES,
  endToEndText,
  isPassRequest,
  passReply,
  smallWindowConfig,
} from '../small-window.js';

const MESSAGES = END_TO_END_MESSAGES;
const tokenizer = await loadTokenizer('o200k_base');
const replies: (string | null)[] = [];

/** Chat requests (no response_format) get a short answer; summary requests a summary and one memory. */
function script(fakeServer: FakeOpenAiServer) {
  let chats = 0;
  fakeServer.reply(
    (request) =>
      passReply(request, {
        summary: '## Decisions\n- The key rotation happens on Friday at 10:00 (ana).',
        memories: [
          {
            type: 'decision',
            text: 'Key rotation is on Friday at 10:00',
            importance: 0.9,
            speaker: 'ana',
            fromSeq: 1,
            toSeq: 1,
          },
        ],
      }) ?? { content: `ack ${++chats}` },
  );
}

const it = ebbWorld({
  fake: { contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) },
  script,
  config: (url) => smallWindowConfig(url, ['[web.bot]', 'respond_to = "all"']),
});

describe('the web channel end to end', () => {
  it(`answers ${MESSAGES} messages once each while the context ebbs through every tier`, async ({
    fake,
    fresh,
    ebb,
    web,
  }) => {
    expect(ebb.embedded).toEqual({ database: false, queue: false, offline: false });
    for (let i = 0; i < MESSAGES; i++) {
      // Mostly chatter; now and then two long pastes that jump the usage past the emergency threshold.
      const text = endToEndText(i);
      replies.push(await web.post('a', text, i % 2 ? 'ana' : 'bo', `a-${i}`));
    }
    expect(replies.every((r) => r?.startsWith('ack '))).toBe(true);
    // The same id again is a duplicate: stored once, not answered twice; the first reply comes back.
    expect(await web.post('a', 'message 0: status of item 0 is amber, see OPS-1000', 'bo', 'a-0')).toBe(
      replies[0],
    );
    // The same id for another text is a conflict.
    const reused = await fetch(`${ebb.web.url}/api/channels/a/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: 'ana', text: 'message 0 again', id: 'a-0' }),
    });
    expect([reused.status, ((await reused.json()) as { code: string }).code]).toEqual([409, 'id_conflict']);

    const channels = new PgChannelStore({ db: fresh.db });
    const context = await channels.loadContext('web:a');
    // Every user message and every reply archived once, in order.
    expect(context.headSeq).toBe(2 * MESSAGES);
    const archive = await channels.readArchive('web:a', 1, context.headSeq);
    expect(archive.filter((m) => m.role === 'user')).toHaveLength(MESSAGES);
    expect(archive.filter((m) => m.role === 'assistant')).toHaveLength(MESSAGES);
    // Every reply posted once: the chat model was asked once per message.
    const chatRequests = fake.completionRequests.filter((r) => !isPassRequest(r));
    expect(chatRequests).toHaveLength(MESSAGES);
  }, 240_000);

  it('ran background, aggressive and emergency passes at their thresholds', async ({ fake, fresh, ebb }) => {
    const runs = new PgRunStore({ db: fresh.db });
    await vi.waitFor(
      async () => {
        const recent = await runs.recent('web:a', 10);
        expect(recent.every((r) => r.status !== 'queued' && r.status !== 'running')).toBe(true);
      },
      { timeout: 30_000, interval: 100 },
    );
    const all = await runs.recent('web:a', 10_000);
    // Posted at full speed: passes start early; the long pastes still force emergencies.
    expectRunsAtTheirThresholds(all, resolveChannel(smallWindowConfig(fake.url), 'web:a').compaction, []);
    expect(await emergencyTruncations(ebb.web.url)).toBeGreaterThan(0);
    expect(all.filter((r) => r.status === 'completed').length).toBeGreaterThan(10);
    // No prompt the model was sent went past its window: the fake counts with the real tokenizer
    // and answers context_length_exceeded when it does.
    expect(fake.completionRequests.filter((r) => r.fault === 'context_length_exceeded')).toEqual([]);
  });

  it('recalls memories in the channel that produced them and never in another', async ({
    fake,
    fresh,
    web,
  }) => {
    const memories = new PgMemoryStore({ db: fresh.db });
    expect((await memories.list({ scope: 'web:a' })).length).toBeGreaterThan(0);
    const before = fake.completionRequests.length;
    await web.post('a', 'when is the key rotation?', 'ana');
    await web.post('b', 'when is the key rotation?', 'bo');
    const [inA, inB] = fake.completionRequests.slice(before).map((r) => JSON.stringify(r.body));
    expect(inA).toContain('Key rotation is on Friday at 10:00');
    expect(inB).not.toContain('Key rotation');
    expect(await memories.list({ scope: 'web:b' })).toHaveLength(0);
  });

  it('answers /context and /compact', async ({ web }) => {
    const report = await web.command('a', 'context');
    expect(report).toMatch(/^Context of web:a: ▕[█·│]+▏ \d+\.\d%/);
    expect(report).toContain('thresholds: background 80%, aggressive 85%, emergency 95%');
    expect(report).toMatch(/memories in scope: [1-9]/);
    expect(report).toMatch(/pass (background|aggressive|emergency) #1–#\d+: /);
    // Enough that a pass frees tokens: what it may take must hold more than its summary.
    for (let i = 0; i < 40; i++)
      await web.post('c', `fresh channel message ${i} about the migration plan`, 'ana');
    expect(await web.command('c', 'compact', 'the migration plan')).toMatch(
      /^Compaction queued \(focus: the migration plan\): /,
    );
  });
});
