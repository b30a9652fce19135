/**
 * What the bot's tests share around a `Bot`: a platform that records what the bot posts (and holds
 * the handlers the bot gave it), and the closers a test registers, run after each test, newest first.
 */
import type { Platform, PlatformAdapter, PlatformHandlers } from '@ebb/core';
import { afterEach } from 'vitest';

/** A platform that posts nowhere but remembers what was posted, in order. */
export class RecordingPlatform implements PlatformAdapter {
  readonly platform: Platform;
  readonly sent: string[] = [];
  handlers: PlatformHandlers | undefined;
  readonly #ids: string;

  /**
   * `ids` starts each posted message's platform id: bots that post into one channel need their own
   * (the archive keeps one message per platform id).
   */
  constructor(platform: Platform = 'web', ids = 'out') {
    this.platform = platform;
    this.#ids = ids;
  }

  async start(handlers: PlatformHandlers) {
    this.handlers = handlers;
  }

  async send(_key: string, text: string) {
    this.sent.push(text);
    return { platformMessageId: `${this.#ids}-${this.sent.length}` };
  }

  async typing() {}
  async stop() {}
}

/** Closers run after each test, newest first, whatever failed; push one where a thing is opened. */
export function closersAfterEach(): (() => Promise<unknown>)[] {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  }, 30_000);
  return closers;
}
