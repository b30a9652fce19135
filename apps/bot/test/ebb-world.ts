/**
 * The world most system tests run in, as vitest fixtures (`test.extend`): `ebbWorld(setup)` returns
 * a `test` whose fixtures are set up once per file, for the first test that asks for one, and torn
 * down after the file's last test, in the reverse order:
 *
 *   fake    a `FakeOpenAiServer` (`setup.fake`: its window, tokenizer; `setup.script` answers)
 *   fresh   a Postgres schema of its own, migrated (`@ebb/db/test-support`)
 *   prefix  a Redis key prefix of its own, dropped at the end
 *   ebb     `startEbb` with the worker, the web channel on a free port, over `fresh` and `prefix`,
 *           the config `setup.config` makes from the fake's URL, quick LLM retries, no process
 *           metrics (`setup.start` adds or overrides options: a logger to read, MCP backoff)
 *   web     a client of its web channel: `post` (asserts the 2xx; a message `id` if given) and `command`
 *
 * A file that needs two Ebbs, child processes or a proxy in front of Postgres sets its world up
 * itself; this is the common one.
 */
import type { EbbConfig } from '@ebb/config';
import { loadEnv } from '@ebb/config';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer, type FakeOpenAiServerOptions } from '@ebb/testing/openai';
import { expect, test } from 'vitest';
import { type RunningEbb, type StartOptions, startEbb } from '../src/start-ebb.js';

export interface EbbWorldSetup {
  /** The config Ebb runs, given the fake's URL for `[llm] base_url`. */
  readonly config: (fakeUrl: string) => EbbConfig;
  readonly fake?: FakeOpenAiServerOptions;
  /** Scripts the fake's answers before Ebb starts. */
  readonly script?: (fake: FakeOpenAiServer) => void;
  /** Environment variables besides the API key, the prefix and `LOG_LEVEL=silent`. */
  readonly env?: Readonly<Record<string, string>>;
  readonly start?: Partial<StartOptions>;
  /** Awaited after Ebb started, before the first test (MCP servers connected, say). */
  readonly ready?: (ebb: RunningEbb) => Promise<void>;
}

/** A client of the world's web channel. */
export interface WebClient {
  /**
   * Posts a message to `web:<channel>`, expects it archived (200), and gives the reply. With an `id`,
   * the same id again is a retry of it (the first reply comes back).
   */
  post(channel: string, text: string, author?: string, id?: string): Promise<string | null>;
  /** Runs `/name args` in `web:<channel>` and gives its answer. */
  command(channel: string, name: 'context' | 'compact', args?: string): Promise<string>;
}

export function ebbWorld(setup: EbbWorldSetup) {
  return (
    test
      // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's needs from this pattern
      .extend('fake', { scope: 'file' }, async ({}, { onCleanup }) => {
        const fake = await FakeOpenAiServer.start(setup.fake);
        onCleanup(() => fake.close());
        setup.script?.(fake);
        return fake;
      })
      // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's needs from this pattern
      .extend('fresh', { scope: 'file' }, async ({}, { onCleanup }) => {
        const fresh = await freshSchemaDb();
        onCleanup(() => fresh.close());
        return fresh;
      })
      // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's needs from this pattern
      .extend('prefix', { scope: 'file' }, async ({}, { onCleanup }) => {
        const prefix = randomPrefix();
        onCleanup(() => dropPrefix(prefix));
        return prefix;
      })
      .extend('ebb', { scope: 'file' }, async ({ fake, fresh, prefix }, { onCleanup }) => {
        const config = setup.config(fake.url);
        const ebb = await startEbb({
          config: () => config,
          env: loadEnv({
            OPENAI_API_KEY: 'test-key',
            EBB_REDIS_PREFIX: prefix,
            LOG_LEVEL: 'silent',
            ...setup.env,
          }),
          logger: createLogger({ level: 'silent' }),
          withWorker: true,
          webPort: 0,
          database: fresh.database,
          llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
          processMetrics: false,
          ...setup.start,
        });
        onCleanup(() => ebb.close());
        await setup.ready?.(ebb);
        return ebb;
      })
      .extend('web', { scope: 'file' }, async ({ ebb }) => webClient(ebb.web.url))
  );
}

function webClient(url: string): WebClient {
  const send = (path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  return {
    async post(channel, text, author = 'ana', id) {
      const res = await send(`/api/channels/${channel}/messages`, { author, text, id });
      expect(res.status).toBe(200);
      return ((await res.json()) as { reply: string | null }).reply;
    },
    async command(channel, name, args = '') {
      const res = await send(`/api/channels/${channel}/commands`, { name, args, user: 'ana' });
      expect(res.status).toBe(200);
      return ((await res.json()) as { reply: string }).reply;
    },
  };
}
