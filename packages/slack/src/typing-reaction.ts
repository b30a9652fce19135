/**
 * Typing on Slack: Slack has no typing indicator for bots, so `show` adds a reaction
 * (`:hourglass_flowing_sand:` by default) to the latest message from a person in the conversation,
 * and `clear` removes it once the answer is sent. Needs the `reactions:write` scope; without it the
 * indicator silently does nothing.
 */
import { type Logger, LruMap } from '@ebb/core';
import type { webApi } from '@slack/bolt';
import { slackErrorString } from './slack-error.js';

export interface MessageRef {
  readonly channel: string;
  readonly ts: string;
}

export class TypingReaction {
  /** The reaction's name; `false` turns the indicator off. */
  readonly #name: string | false;
  readonly #log: Logger;
  /** The latest message from a person in each conversation: what `show` reacts to. */
  readonly #lastFromPerson = new LruMap<string, MessageRef>(1_000);
  /** Conversations whose typing reaction is on, and where. */
  readonly #shown = new LruMap<string, MessageRef>(1_000);

  constructor(name: string | false, log: Logger) {
    this.#name = name;
    this.#log = log;
  }

  /** Remembers the message a person just sent in `channelKey`: the one the next `show` reacts to. */
  noteFromPerson(channelKey: string, message: MessageRef): void {
    this.#lastFromPerson.set(channelKey, message);
  }

  /** Puts the reaction on, once per message; never throws. */
  async show(client: webApi.WebClient, channelKey: string): Promise<void> {
    const name = this.#name;
    const target = this.#lastFromPerson.get(channelKey);
    if (name === false || !target) return;
    const current = this.#shown.get(channelKey);
    if (current?.ts === target.ts) return;
    try {
      await client.reactions.add({ channel: target.channel, timestamp: target.ts, name });
      this.#shown.set(channelKey, target);
    } catch (err) {
      if (slackErrorString(err) === 'already_reacted') {
        this.#shown.set(channelKey, target);
        return;
      }
      this.#log.debug(
        { event: 'slack.typing_failed', err, channel: channelKey },
        'slack typing reaction failed',
      );
    }
  }

  /** Takes the reaction off, if it is on; never throws. */
  async clear(client: webApi.WebClient, channelKey: string): Promise<void> {
    const target = this.#shown.get(channelKey);
    const name = this.#name;
    if (!target || name === false) return;
    this.#shown.delete(channelKey);
    try {
      await client.reactions.remove({ channel: target.channel, timestamp: target.ts, name });
    } catch (err) {
      this.#log.debug(
        { event: 'slack.typing_clear_failed', err, channel: channelKey },
        'slack typing reaction removal failed',
      );
    }
  }
}
