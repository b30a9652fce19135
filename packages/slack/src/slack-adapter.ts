/**
 * Ebb on Slack, through Bolt: Socket Mode (an outbound WebSocket, no public URL) or the Events API
 * (an HTTP receiver Slack POSTs signed requests to). This module wires the pieces together:
 *
 * - Bolt acknowledges every event before our listener runs (HTTP 200, or the Socket Mode ack), so
 *   Slack gets its ack within 3 s however long `onMessage` takes to finish the turn.
 * - `message` and `app_mention` events, deduplicated by `channel:ts`: `slack-message-events.ts`, with
 *   the name and DM lookups in `slack-lookups.ts`. Deletions and edits (`message_deleted`, a tombstone
 *   or an edit in `message_changed`) go to `onMessageChange` under the `ts` the message was archived
 *   under; this bot's own replies deleted are reported too, changes to them are not (`read-message.ts`).
 * - Slash commands `/context` and `/compact [focus]`, answered in the ack or through `response_url`:
 *   `slack-commands.ts`.
 * - Replies: the model's Markdown as Slack's mrkdwn (`markdown-to-mrkdwn.ts`), split into messages
 *   under Slack's recommended 4,000 characters (`split-mrkdwn.ts`), in the thread the question was
 *   asked in (a thread key names it). A top-level message is answered in the channel, not in a new
 *   thread: the question was archived under the channel's key, and a thread is its own conversation
 *   (`slack:<team>:<channel>:<thread_ts>`) that would not hold it.
 * - Typing: in an assistant thread (Slack's AI-app surface, `assistant-threads.ts`) the status line
 *   "is thinking…"; elsewhere a reaction on the message being answered, removed by `send`
 *   (`typing-reaction.ts`).
 * - The receivers for both modes, and the HTTP body limit: `slack-receivers.ts`.
 */

import { type Logger, type PlatformAdapter, type PlatformHandlers, SILENT_LOGGER } from '@ebb/core';
import { App, webApi } from '@slack/bolt';
import { AssistantThreads } from './assistant-threads.js';
import { boltLogger } from './bolt-logger.js';
import { parseSlackChannelKey } from './channel-key.js';
import { markdownToMrkdwn } from './markdown-to-mrkdwn.js';
import {
  DEFAULT_SLACK_ADAPTER,
  type SlackAdapterOptions,
  slackAdapterOptionProblems,
} from './slack-adapter-options.js';
import { answerSlackCommand } from './slack-commands.js';
import { SlackError, toEbbError } from './slack-error.js';
import { SlackLookups } from './slack-lookups.js';
import { type SlackConnection, SlackMessageEvents } from './slack-message-events.js';
import {
  createSlackReceiver,
  type SlackReceiver,
  startSlackReceiver,
  stopSlackReceiver,
} from './slack-receivers.js';
import { splitMrkdwn } from './split-mrkdwn.js';
import { TypingReaction } from './typing-reaction.js';

export { DEFAULT_SLACK_ADAPTER, type SlackAdapterOptions } from './slack-adapter-options.js';
export { slackTsToIso } from './slack-message-events.js';
export { SLACK_EVENTS_PATH } from './slack-receivers.js';

interface Running extends SlackConnection {
  readonly receiver: SlackReceiver;
}

export class SlackAdapter implements PlatformAdapter {
  readonly platform = 'slack' as const;
  readonly #options: SlackAdapterOptions;
  readonly #log: Logger;
  readonly #typing: TypingReaction;
  readonly #events: SlackMessageEvents;
  /** Undefined when `assistantStatus` is false. */
  readonly #assistant: AssistantThreads | undefined;
  #running: Running | undefined;
  #starting = false;
  #eventsUrl: string | undefined;

  constructor(options: SlackAdapterOptions) {
    const problems = slackAdapterOptionProblems(options);
    if (problems.length > 0) {
      throw new SlackError(`Slack adapter options are invalid: ${problems.join('; ')}.`, {
        code: 'slack_config_invalid',
      });
    }
    this.#options = options;
    this.#log = options.logger ?? SILENT_LOGGER;
    this.#typing = new TypingReaction(
      options.typingReaction ?? DEFAULT_SLACK_ADAPTER.typingReaction,
      this.#log,
    );
    const assistantStatus = options.assistantStatus ?? DEFAULT_SLACK_ADAPTER.assistantStatus;
    this.#assistant =
      assistantStatus === false
        ? undefined
        : new AssistantThreads({
            status: assistantStatus,
            suggestedPrompts: options.suggestedPrompts ?? DEFAULT_SLACK_ADAPTER.suggestedPrompts,
            log: this.#log,
          });
    this.#events = new SlackMessageEvents({
      dedupeCapacity: options.dedupeCapacity ?? DEFAULT_SLACK_ADAPTER.dedupeCapacity,
      log: this.#log,
      lookups: new SlackLookups(this.#log),
      typing: this.#typing,
    });
  }

  /**
   * HTTP mode, once started: the local URL of the receiver (`http://host:port/slack/events`); Slack's
   * Event Subscriptions and slash commands point at its public address, with the same path.
   */
  get eventsUrl(): string | undefined {
    return this.#eventsUrl;
  }

  async start(handlers: PlatformHandlers): Promise<void> {
    if (this.#running || this.#starting) {
      throw new SlackError('The Slack adapter is already started.', { code: 'already_started' });
    }
    this.#starting = true;
    try {
      this.#running = await this.#connect(handlers);
    } finally {
      this.#starting = false;
    }
    const { self } = this.#running;
    this.#log.info(
      { event: 'slack.started', mode: this.#options.mode, team: self.teamId, botUserId: self.botUserId },
      'slack adapter started',
    );
  }

  async #connect(handlers: PlatformHandlers): Promise<Running> {
    const options = this.#options;
    const slackApiUrl = options.slackApiUrl ?? DEFAULT_SLACK_ADAPTER.slackApiUrl;
    const logger = boltLogger(this.#log);
    const client = new webApi.WebClient(options.botToken, {
      slackApiUrl,
      logger,
      retryConfig: { retries: 3, factor: 2, minTimeout: 500, maxTimeout: 5_000, randomize: true },
    });

    let auth: webApi.AuthTestResponse;
    try {
      auth = await client.auth.test();
    } catch (err) {
      throw toEbbError(err, { doing: 'auth.test (check the bot token)', code: 'slack_auth_failed' });
    }
    if (!auth.team_id || !auth.user_id || !auth.bot_id) {
      throw new SlackError('Slack auth.test did not name a team, bot user and bot: is this a bot token?', {
        code: 'slack_auth_failed',
      });
    }
    const self = {
      teamId: auth.team_id,
      botUserId: auth.user_id,
      botId: auth.bot_id,
      botName: options.botName ?? auth.user ?? 'ebb',
    };

    const receiver = createSlackReceiver(options, slackApiUrl, logger);
    const app = new App({
      receiver,
      token: options.botToken,
      botId: self.botId,
      botUserId: self.botUserId,
      tokenVerificationEnabled: false,
      // Our own messages are dropped (and logged) by readSlackMessage, with the other decisions.
      ignoreSelf: false,
      convoStore: false,
      logger,
      clientOptions: { slackApiUrl, logger },
    });
    const running: Running = { receiver, client, self, handlers };
    const commandContext = {
      teamId: self.teamId,
      handlers,
      log: this.#log,
      replyTimeoutMs: options.commandReplyTimeoutMs ?? DEFAULT_SLACK_ADAPTER.commandReplyTimeoutMs,
    };
    if (this.#assistant) {
      app.assistant(
        this.#assistant.middleware({
          teamId: self.teamId,
          handle: (event, retryNum) => this.#events.handle(running, event, retryNum),
        }),
      );
    }
    app.event('message', async ({ event, context }) => this.#events.handle(running, event, context.retryNum));
    app.event('app_mention', async ({ event, context }) =>
      this.#events.handle(running, event, context.retryNum),
    );
    app.command(/.*/, async ({ command, ack, respond }) => {
      await answerSlackCommand(commandContext, command, ack, respond);
    });
    app.error(async (err) => {
      this.#log.error({ event: 'slack.event_failed', err }, 'slack event processing failed');
    });

    try {
      this.#eventsUrl = await startSlackReceiver(receiver, options);
    } catch (err) {
      await stopSlackReceiver(receiver, this.#log);
      throw toEbbError(err, {
        doing: `connecting to Slack (${options.mode} mode)`,
        code: 'slack_connect_failed',
      });
    }
    return running;
  }

  async send(channelKey: string, text: string): Promise<{ readonly platformMessageId: string }> {
    const conversation = parseSlackChannelKey(channelKey);
    if (!conversation) {
      throw new SlackError(`Not a Slack channel key: ${channelKey}`, { code: 'invalid_channel_key' });
    }
    const running = this.#running;
    if (!running) throw new SlackError('The Slack adapter is not started.', { code: 'not_started' });
    const limit = this.#options.messageLimit ?? DEFAULT_SLACK_ADAPTER.messageLimit;
    const [first, ...more] = splitMrkdwn(markdownToMrkdwn(text), limit);
    if (first === undefined) {
      throw new SlackError(`Cannot post an empty message to ${channelKey}.`, { code: 'slack_send_failed' });
    }
    const post = async (chunk: string): Promise<string> => {
      let ts: string | undefined;
      try {
        const result = await running.client.chat.postMessage({
          channel: conversation.channelId,
          text: chunk,
          ...(conversation.threadTs ? { thread_ts: conversation.threadTs } : {}),
        });
        ts = result.ts;
      } catch (err) {
        throw toEbbError(err, { doing: 'chat.postMessage', code: 'slack_send_failed' });
      }
      if (!ts) throw new SlackError('Slack chat.postMessage returned no ts.', { code: 'slack_send_failed' });
      return ts;
    };
    const platformMessageId = await post(first);
    for (const chunk of more) await post(chunk);
    await this.#typing.clear(running.client, channelKey);
    return { platformMessageId };
  }

  async typing(channelKey: string): Promise<void> {
    const running = this.#running;
    if (!running) return;
    if (await this.#assistant?.showStatus(running.client, channelKey)) return;
    await this.#typing.show(running.client, channelKey);
  }

  async stop(): Promise<void> {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    this.#eventsUrl = undefined;
    await stopSlackReceiver(running.receiver, this.#log);
    this.#log.info({ event: 'slack.stopped' }, 'slack adapter stopped');
  }
}
