/**
 * Ebb on Slack, through Bolt: Socket Mode (an outbound WebSocket, no public URL) or the Events API
 * (an HTTP receiver Slack POSTs signed requests to).
 *
 * - Bolt acknowledges every event before our listener runs (HTTP 200, or the Socket Mode ack), so
 *   Slack gets its ack within 3 s however long `onMessage` takes to finish the turn.
 * - Both `message` and `app_mention` are handled, and a bounded LRU of `channel:ts` drops the second
 *   delivery of a message: the `app_mention` twin of a `message` event, and Slack's retries
 *   (`x-slack-retry-num` / `retry_attempt`), which carry the same `ts`. Listening to both keeps the
 *   bot working for an app subscribed only to `app_mention` (fewer scopes), and the LRU is needed
 *   for retries anyway.
 * - Slash commands `/context` and `/compact [focus]` answer ephemerally in the ack body; a command
 *   slower than `commandReplyTimeoutMs` is acked empty and answered through its `response_url`.
 * - Typing: Slack has no typing indicator for bots, so `typing` adds a reaction
 *   (`:hourglass_flowing_sand:` by default) to the message being answered and `send` removes it.
 *   Needs the `reactions:write` scope; without it the indicator silently does nothing.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type CommandInvocation,
  type CommandName,
  type InboundMessage,
  type Logger,
  LruMap,
  type PlatformAdapter,
  type PlatformHandlers,
  SILENT_LOGGER,
  settleWithin,
} from '@ebb/core';
import { App, HTTPReceiver, SocketModeReceiver, webApi } from '@slack/bolt';
import { boltLogger } from './bolt-logger.js';
import { parseSlackChannelKey, slackChannelKey } from './channel-key.js';
import { readSlackMessage, type SlackBotIdentity, type SlackMessage } from './read-message.js';
import { SlackError, slackErrorString, toEbbError } from './slack-error.js';
import { escapeSlackText, mentionedUserIds, renderSlackText } from './slack-text.js';

export interface SlackAdapterOptions {
  /** `socket`: Socket Mode (needs `appToken`); `http`: the Events API (needs `signingSecret`). */
  readonly mode: 'socket' | 'http';
  /** The bot token (`xoxb-…`). */
  readonly botToken: string;
  /** The app-level token (`xapp-…`, scope `connections:write`), for Socket Mode. */
  readonly appToken?: string;
  /** The app's signing secret, for the Events API. */
  readonly signingSecret?: string;
  /** HTTP mode: the port to listen on (0 picks a free one; see `eventsUrl`). */
  readonly port?: number;
  /** HTTP mode: the address to listen on. */
  readonly host?: string;
  /** HTTP mode: the largest request body read, in bytes; larger ones are answered 413 unread. */
  readonly maxBodyBytes?: number;
  /** The Web API base URL (tests point it at a fake). */
  readonly slackApiUrl?: string;
  /** The name mentions of the bot become (`@ebb`); the bot user's handle from `auth.test` by default. */
  readonly botName?: string;
  readonly logger?: Logger;
  /** The reaction `typing` puts on the message being answered; `false` turns the indicator off. */
  readonly typingReaction?: string | false;
  /** How long a slash command may take before it is acked empty and answered via `response_url`. */
  readonly commandReplyTimeoutMs?: number;
  /** Socket Mode: how long to wait for a pong, and the base delay before a reconnect (one Bolt setting). */
  readonly socketPingTimeoutMs?: number;
  /** How many recent deliveries (`channel:ts`) are remembered to drop duplicates and retries. */
  readonly dedupeCapacity?: number;
}

export const DEFAULT_SLACK_ADAPTER = {
  port: 3000,
  host: '0.0.0.0',
  slackApiUrl: 'https://slack.com/api/',
  typingReaction: 'hourglass_flowing_sand',
  commandReplyTimeoutMs: 2_500,
  socketPingTimeoutMs: 5_000,
  dedupeCapacity: 2_000,
  maxBodyBytes: 256 * 1024,
} as const satisfies Required<
  Pick<
    SlackAdapterOptions,
    | 'port'
    | 'host'
    | 'slackApiUrl'
    | 'typingReaction'
    | 'commandReplyTimeoutMs'
    | 'socketPingTimeoutMs'
    | 'maxBodyBytes'
    | 'dedupeCapacity'
  >
>;

/** The path Bolt's HTTP receiver serves events and commands on. */
export const SLACK_EVENTS_PATH = '/slack/events';

const COMMANDS: ReadonlyMap<string, CommandName> = new Map([
  ['/context', 'context'],
  ['/compact', 'compact'],
]);
const HELP =
  'Ebb knows two commands: `/context` shows what it keeps of this conversation, `/compact [focus]` summarizes it now.';
const COMMAND_FAILED = 'Sorry, that command failed. Please try again in a moment.';
const NAME_TTL_MS = 60 * 60 * 1000;
const STOP_TIMEOUT_MS = 5_000;

interface Running {
  readonly receiver: HTTPReceiver | SocketModeReceiver;
  readonly client: webApi.WebClient;
  readonly self: SlackBotIdentity & { readonly botName: string };
  readonly handlers: PlatformHandlers;
}

interface MessageRef {
  readonly channel: string;
  readonly ts: string;
}

export class SlackAdapter implements PlatformAdapter {
  readonly platform = 'slack' as const;
  readonly #options: SlackAdapterOptions;
  readonly #log: Logger;
  readonly #seen: LruMap<string, true>;
  readonly #names = new LruMap<string, { readonly name: string; readonly at: number }>(1_000);
  readonly #pendingNames = new Map<string, Promise<string>>();
  readonly #channelTypes = new LruMap<string, string>(1_000);
  /** The latest message from a person in each conversation: what `typing` reacts to. */
  readonly #lastFromPerson = new LruMap<string, MessageRef>(1_000);
  /** Conversations whose typing reaction is on, and where. */
  readonly #typing = new LruMap<string, MessageRef>(1_000);
  #running: Running | undefined;
  #starting = false;
  #eventsUrl: string | undefined;

  constructor(options: SlackAdapterOptions) {
    const problems = optionProblems(options);
    if (problems.length > 0) {
      throw new SlackError(`Slack adapter options are invalid: ${problems.join('; ')}.`, {
        code: 'slack_config_invalid',
      });
    }
    this.#options = options;
    this.#log = options.logger ?? SILENT_LOGGER;
    this.#seen = new LruMap(options.dedupeCapacity ?? DEFAULT_SLACK_ADAPTER.dedupeCapacity);
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

    const receiver = this.#receiver(slackApiUrl, logger);
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
    app.event('message', async ({ event, context }) => this.#onEvent(running, event, context.retryNum));
    app.event('app_mention', async ({ event, context }) => this.#onEvent(running, event, context.retryNum));
    app.command(/.*/, async ({ command, ack, respond }) => {
      await this.#onCommand(running, command, ack, respond);
    });
    app.error(async (err) => {
      this.#log.error({ err }, 'slack event processing failed');
    });

    try {
      if (receiver instanceof HTTPReceiver) {
        const host = options.host ?? DEFAULT_SLACK_ADAPTER.host;
        const server = await receiver.start({ port: options.port ?? DEFAULT_SLACK_ADAPTER.port, host });
        // Bolt answers a body declared over the limit with 413 unread; close the connection after
        // that answer, so the client stops sending instead of holding it open until keep-alive ends.
        const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_SLACK_ADAPTER.maxBodyBytes;
        server.on('request', (req: IncomingMessage, res: ServerResponse) => {
          if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes) res.setHeader('Connection', 'close');
        });
        const { port } = server.address() as AddressInfo;
        const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
        this.#eventsUrl = `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${port}${SLACK_EVENTS_PATH}`;
      } else {
        await receiver.start();
      }
    } catch (err) {
      await this.#stopReceiver(receiver);
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
    let ts: string | undefined;
    try {
      const result = await running.client.chat.postMessage({
        channel: conversation.channelId,
        text: escapeSlackText(text),
        ...(conversation.threadTs ? { thread_ts: conversation.threadTs } : {}),
      });
      ts = result.ts;
    } catch (err) {
      throw toEbbError(err, { doing: 'chat.postMessage', code: 'slack_send_failed' });
    }
    if (!ts) throw new SlackError('Slack chat.postMessage returned no ts.', { code: 'slack_send_failed' });
    await this.#clearTyping(running, channelKey);
    return { platformMessageId: ts };
  }

  async typing(channelKey: string): Promise<void> {
    const name = this.#options.typingReaction ?? DEFAULT_SLACK_ADAPTER.typingReaction;
    const running = this.#running;
    const target = this.#lastFromPerson.get(channelKey);
    if (name === false || !running || !target) return;
    const current = this.#typing.get(channelKey);
    if (current?.ts === target.ts) return;
    try {
      await running.client.reactions.add({ channel: target.channel, timestamp: target.ts, name });
      this.#typing.set(channelKey, target);
    } catch (err) {
      if (slackErrorString(err) === 'already_reacted') {
        this.#typing.set(channelKey, target);
        return;
      }
      this.#log.debug({ err, channel: channelKey }, 'slack typing reaction failed');
    }
  }

  async stop(): Promise<void> {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    this.#eventsUrl = undefined;
    await this.#stopReceiver(running.receiver);
    this.#log.info({ event: 'slack.stopped' }, 'slack adapter stopped');
  }

  #receiver(slackApiUrl: string, logger: ReturnType<typeof boltLogger>): HTTPReceiver | SocketModeReceiver {
    const options = this.#options;
    switch (options.mode) {
      case 'socket':
        return new SocketModeReceiver({
          appToken: options.appToken ?? '',
          logger,
          clientPingTimeout: options.socketPingTimeoutMs ?? DEFAULT_SLACK_ADAPTER.socketPingTimeoutMs,
          // The Socket Mode client's own WebClient (apps.connections.open) takes its options here.
          installerOptions: { clientOptions: { slackApiUrl } },
        });
      case 'http':
        return new HTTPReceiver({
          signingSecret: options.signingSecret ?? '',
          endpoints: SLACK_EVENTS_PATH,
          logger,
          processBeforeResponse: false,
          // Bolt refuses a larger body with 413 from its declared length, or as soon as it exceeds it.
          bodyLimit: options.maxBodyBytes ?? DEFAULT_SLACK_ADAPTER.maxBodyBytes,
        });
      default: {
        const exhaustive: never = options.mode;
        throw new SlackError(`Unknown Slack mode ${String(exhaustive)}`, { code: 'slack_config_invalid' });
      }
    }
  }

  async #stopReceiver(receiver: HTTPReceiver | SocketModeReceiver): Promise<void> {
    try {
      if (receiver instanceof HTTPReceiver) {
        await receiver.stop();
      } else {
        // SocketModeReceiver.stop() does not wait for the socket to close; the client's disconnect does.
        await settleWithin(receiver.client.disconnect(), STOP_TIMEOUT_MS);
      }
    } catch (err) {
      this.#log.debug({ err }, 'slack receiver stop failed (already stopped?)');
    }
  }

  async #onEvent(running: Running, event: unknown, retryNum: number | undefined): Promise<void> {
    const decision = readSlackMessage(event, running.self);
    if (decision.kind === 'ignore') {
      // `channel` in a log line is Ebb's channel key; Slack's own id goes under `channelId`.
      const { kind: _kind, channel, ...fields } = decision;
      this.#log.debug(
        {
          event: 'slack.message_ignored',
          ...fields,
          ...(channel === undefined ? {} : { channelId: channel }),
        },
        'slack message ignored',
      );
      return;
    }
    const { message } = decision;
    const seenKey = `${message.channel}:${message.ts}`;
    if (this.#seen.has(seenKey)) {
      this.#log.debug(
        {
          event: 'slack.message_ignored',
          reason: 'duplicate',
          channelId: message.channel,
          ts: message.ts,
          ...(retryNum ? { retryNum } : {}),
        },
        'slack message ignored',
      );
      return;
    }
    this.#seen.set(seenKey, true);
    try {
      const inbound = await this.#toInbound(running, message);
      if (!inbound.fromBot)
        this.#lastFromPerson.set(inbound.channelKey, { channel: message.channel, ts: message.ts });
      await running.handlers.onMessage(inbound);
    } catch (err) {
      // Let a retry of this message through: it was not accepted.
      this.#seen.delete(seenKey);
      this.#log.error(
        { err, channel: message.channelKey, platformMessageId: message.ts },
        'slack message handler failed',
      );
    }
  }

  async #toInbound(running: Running, message: SlackMessage): Promise<InboundMessage> {
    const { self, client } = running;
    const mentioned = mentionedUserIds(message.text, self.botUserId);
    const [authorName, direct, ...names] = await Promise.all([
      message.authorNameHint ?? this.#userName(client, message.authorId),
      this.#isDirect(client, message),
      ...mentioned.map((id) => this.#userName(client, id)),
    ]);
    const userNames = new Map(mentioned.map((id, i) => [id, names[i] ?? id]));
    return {
      platform: 'slack',
      channelKey: message.channelKey,
      platformMessageId: message.ts,
      authorId: message.authorId,
      authorName,
      fromBot: message.fromBot,
      text: renderSlackText(message.text, { botUserId: self.botUserId, botName: self.botName, userNames }),
      ts: slackTsToIso(message.ts),
      mentionsBot: message.mentionsBot,
      direct,
    };
  }

  /** A display name (never an email): display name, real name, handle, or the id when Slack fails. */
  async #userName(client: webApi.WebClient, userId: string): Promise<string> {
    const cached = this.#names.get(userId);
    if (cached && Date.now() - cached.at < NAME_TTL_MS) return cached.name;
    const pending = this.#pendingNames.get(userId);
    if (pending) return pending;
    const lookup = (async () => {
      try {
        const { user } = await client.users.info({ user: userId });
        const name =
          nonEmpty(user?.profile?.display_name) ??
          nonEmpty(user?.profile?.real_name) ??
          nonEmpty(user?.real_name) ??
          nonEmpty(user?.name) ??
          userId;
        this.#names.set(userId, { name, at: Date.now() });
        return name;
      } catch (err) {
        this.#log.debug({ err, userId }, 'slack users.info failed; using the user id as name');
        return userId;
      } finally {
        this.#pendingNames.delete(userId);
      }
    })();
    this.#pendingNames.set(userId, lookup);
    return lookup;
  }

  /** DMs are `channel_type: 'im'`; `app_mention` carries no type, so ask Slack once per channel. */
  async #isDirect(client: webApi.WebClient, message: SlackMessage): Promise<boolean> {
    if (message.channelType !== undefined) return message.channelType === 'im';
    const cached = this.#channelTypes.get(message.channel);
    if (cached !== undefined) return cached === 'im';
    try {
      const { channel } = await client.conversations.info({ channel: message.channel });
      const type = channel?.is_im
        ? 'im'
        : channel?.is_mpim
          ? 'mpim'
          : channel?.is_private
            ? 'group'
            : 'channel';
      this.#channelTypes.set(message.channel, type);
      return type === 'im';
    } catch (err) {
      this.#log.debug({ err, channelId: message.channel }, 'slack conversations.info failed');
      return message.channel.startsWith('D');
    }
  }

  async #onCommand(
    running: Running,
    command: {
      readonly command: string;
      readonly text: string;
      readonly channel_id: string;
      readonly user_id: string;
    },
    ack: (response?: { response_type: 'ephemeral'; text: string }) => Promise<void>,
    respond: (message: { response_type: 'ephemeral'; text: string }) => Promise<unknown>,
  ): Promise<void> {
    const name = COMMANDS.get(command.command);
    if (!name) {
      await ack({ response_type: 'ephemeral', text: HELP });
      return;
    }
    const invocation: CommandInvocation = {
      platform: 'slack',
      name,
      channelKey: slackChannelKey({ teamId: running.self.teamId, channelId: command.channel_id }),
      userId: command.user_id,
      args: command.text.trim(),
    };
    const reply = running.handlers.onCommand(invocation).catch((err: unknown) => {
      this.#log.error({ err, channel: invocation.channelKey, command: name }, 'slack command failed');
      return COMMAND_FAILED;
    });
    const inTime = await settleWithin(
      reply,
      this.#options.commandReplyTimeoutMs ?? DEFAULT_SLACK_ADAPTER.commandReplyTimeoutMs,
    );
    if (inTime.done) {
      await ack({ response_type: 'ephemeral', text: escapeSlackText(inTime.value) });
      return;
    }
    await ack();
    const text = escapeSlackText(await reply);
    try {
      await respond({ response_type: 'ephemeral', text });
    } catch (err) {
      this.#log.warn({ err, channel: invocation.channelKey, command: name }, 'slack command reply failed');
    }
  }

  async #clearTyping(running: Running, channelKey: string): Promise<void> {
    const target = this.#typing.get(channelKey);
    const name = this.#options.typingReaction ?? DEFAULT_SLACK_ADAPTER.typingReaction;
    if (!target || name === false) return;
    this.#typing.delete(channelKey);
    try {
      await running.client.reactions.remove({ channel: target.channel, timestamp: target.ts, name });
    } catch (err) {
      this.#log.debug({ err, channel: channelKey }, 'slack typing reaction removal failed');
    }
  }
}

function optionProblems(options: SlackAdapterOptions): string[] {
  const problems: string[] = [];
  // Only the prefix of a token ever appears in a message.
  if (!options.botToken) problems.push('botToken is required');
  else if (!options.botToken.startsWith('xoxb-')) {
    problems.push(`botToken must be a bot token (xoxb-…), got one starting ${tokenPrefix(options.botToken)}`);
  }
  if (options.mode === 'socket' && !options.appToken) problems.push('socket mode needs appToken (xapp-…)');
  else if (options.mode === 'socket' && !options.appToken?.startsWith('xapp-')) {
    // Slack answers apps.connections.open with not_allowed_token_type, which Bolt retries forever.
    problems.push(
      `appToken must be an app-level token (xapp-…), got one starting ${tokenPrefix(options.appToken)}`,
    );
  }
  if (options.mode === 'http' && !options.signingSecret) problems.push('http mode needs signingSecret');
  if (options.mode !== 'socket' && options.mode !== 'http') {
    problems.push(`mode must be "socket" or "http", got ${JSON.stringify(options.mode)}`);
  }
  if (
    options.port !== undefined &&
    (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
  ) {
    problems.push(`port must be an integer from 0 to 65535, got ${options.port}`);
  }
  return problems;
}

function tokenPrefix(token: string | undefined): string {
  return JSON.stringify(`${(token ?? '').split('-')[0]?.slice(0, 4) ?? ''}-`);
}

/** Slack's `1712345678.123456` as ISO 8601 (millisecond precision). */
export function slackTsToIso(ts: string): string {
  const seconds = Number(ts);
  return new Date(Number.isFinite(seconds) ? Math.floor(seconds * 1000) : 0).toISOString();
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
