/**
 * Slack's AI-app surface (Agents & AI Apps): a person talks to the app in assistant threads, in their
 * DM with it. Where the app has the surface turned on, Slack sends `assistant_thread_started` when a
 * thread opens (we offer the suggested prompts then), the person's messages arrive as DM thread
 * replies, and `assistant.threads.setStatus` shows "ebb is thinking…" under the thread until the app
 * replies in it (Slack clears it then, or after two minutes).
 *
 * Bolt's `Assistant` middleware takes those events. Its message handler hands each message on to the
 * adapter's ordinary handling (so an assistant thread is a conversation like any other, keyed
 * `slack:<team>:<dm>:<thread_ts>`) and marks the thread, so `typing` shows the status line there.
 * Elsewhere, and for a thread where Slack refuses the status (an app without the surface or without
 * `assistant:write`/`chat:write`), typing falls back to the reaction and the thread is unmarked.
 */
import { type Logger, LruMap } from '@ebb/core';
import { Assistant, type webApi } from '@slack/bolt';
import { parseSlackChannelKey, slackChannelKey } from './channel-key.js';

export interface SuggestedPrompt {
  /** What the button says. */
  readonly title: string;
  /** What the person sends by pressing it. */
  readonly message: string;
}

export interface AssistantThreadsOptions {
  /** The status line, after the app's name: `is thinking…`. */
  readonly status: string;
  /** Offered when a thread starts (Slack takes at most 4); none: nothing is offered. */
  readonly suggestedPrompts: readonly SuggestedPrompt[];
  readonly log: Logger;
}

/** Where the adapter's handling of a message event is (its client, identity and handlers). */
export interface AssistantEventSink {
  readonly teamId: string;
  handle(event: unknown, retryNum: number | undefined): Promise<void>;
}

const MAX_SUGGESTED_PROMPTS = 4;

export class AssistantThreads {
  readonly #options: AssistantThreadsOptions;
  /** Channel keys of the assistant threads seen (started or written in) since the process started. */
  readonly #threads = new LruMap<string, true>(1_000);

  constructor(options: AssistantThreadsOptions) {
    this.#options = options;
  }

  /** Bolt's middleware for the surface, handing messages to `sink`. */
  middleware(sink: AssistantEventSink): Assistant {
    const log = this.#options.log;
    return new Assistant({
      threadStarted: async ({ event, setSuggestedPrompts }) => {
        const thread = event.assistant_thread;
        const key = slackChannelKey({
          teamId: sink.teamId,
          channelId: thread.channel_id,
          threadTs: thread.thread_ts,
        });
        this.#threads.set(key, true);
        log.debug(
          { event: 'slack.assistant_thread_started', channel: key },
          'slack assistant thread started',
        );
        const prompts = this.#options.suggestedPrompts.slice(0, MAX_SUGGESTED_PROMPTS);
        if (prompts.length === 0) return;
        try {
          await setSuggestedPrompts({ prompts: prompts.map((p) => ({ ...p })) });
        } catch (err) {
          log.debug(
            { event: 'slack.suggested_prompts_failed', err, channel: key },
            'slack suggested prompts failed',
          );
        }
      },
      // Bolt's default saves the context (the channel the person is looking at) by editing our
      // first message in the thread; Ebb does not use that context, so nothing is saved.
      threadContextChanged: async () => {},
      userMessage: async ({ event, context }) => {
        const channelId = 'channel' in event ? event.channel : undefined;
        const threadTs = 'thread_ts' in event ? event.thread_ts : undefined;
        if (typeof channelId === 'string' && typeof threadTs === 'string') {
          this.#threads.set(slackChannelKey({ teamId: sink.teamId, channelId, threadTs }), true);
        }
        await sink.handle(event, context.retryNum);
      },
    });
  }

  /**
   * Shows the status line under the thread of `channelKey`; false when it is no assistant thread or
   * Slack refused (the caller shows the reaction instead). Never throws.
   */
  async showStatus(client: webApi.WebClient, channelKey: string): Promise<boolean> {
    if (!this.#threads.has(channelKey)) return false;
    const conversation = parseSlackChannelKey(channelKey);
    if (!conversation?.threadTs) return false;
    try {
      await client.assistant.threads.setStatus({
        channel_id: conversation.channelId,
        thread_ts: conversation.threadTs,
        status: this.#options.status,
      });
      return true;
    } catch (err) {
      this.#threads.delete(channelKey);
      this.#options.log.debug(
        { event: 'slack.assistant_status_failed', err, channel: channelKey },
        'slack assistant status failed',
      );
      return false;
    }
  }
}
