/**
 * The Discord side of the platform port, on discord.js. Messages in guild text channels, threads and
 * DMs become `InboundMessage`s (the bot's own are dropped, and so are gateway replays of a message
 * already delivered); deletions (one, or a moderator's bulk deletion) and edits become
 * `MessageChange`s, keyed as the messages were (`discord-message-changes.ts`); `/context` and `/compact focus:<text>` are registered at start and answered
 * ephemerally; replies (Markdown, which Discord renders as is) are split into messages of at most
 * 2,000 characters; typing is kept up while the model runs. Reconnecting and resuming
 * the gateway session is discord.js's job; the adapter only logs it.
 *
 *   const discord = new DiscordAdapter({ token, logger });
 *   await discord.start({ onMessage, onCommand });
 *   await discord.send('discord:123:456', 'hello');
 *   await discord.stop();
 */
import {
  type CommandInvocation,
  type InboundMessage,
  type Logger,
  LruMap,
  type PlatformAdapter,
  type PlatformHandlers,
  SILENT_LOGGER,
  settleWithin,
} from '@ebb/core';
import {
  type ChatInputCommandInteraction,
  Client,
  type ClientOptions,
  Events,
  GatewayIntentBits,
  type Interaction,
  type Message,
  MessageFlags,
  Options,
  Partials,
  Routes,
  type SendableChannels,
} from 'discord.js';
import { hasBotMention, rewriteBotMentions } from './bot-mentions.js';
import { discordChannelKey, parseDiscordChannelKey } from './channel-key.js';
import type { ChannelLookupRetry } from './channel-lookup.js';
import { ebbCommands, FOCUS_OPTION, isEbbCommand } from './commands.js';
import { DiscordError, toEbbError } from './discord-errors.js';
import { DiscordMessageChanges, messageChannelKey } from './discord-message-changes.js';
import { settle } from './settle.js';
import { DISCORD_MESSAGE_LIMIT, splitMessage } from './split-message.js';
import { TypingKeepAlive } from './typing-keep-alive.js';

export interface DiscordAdapterOptions {
  /** The bot token (from the environment, never from config files); it is never logged. */
  readonly token: string;
  /** Where commands are registered; by default the application of the logged-in bot. */
  readonly applicationId?: string;
  /** The REST base, `https://discord.com/api` by default; tests pass `FakeDiscord#restApi`. */
  readonly restApi?: string;
  /** Register the commands in these guilds (available at once) instead of globally. */
  readonly guildIdsForCommands?: readonly string[];
  /** Mentions of the bot become `@<botName>`; by default the bot user's display name. */
  readonly botName?: string;
  readonly logger?: Logger;
  /**
   * A command answer not ready after this long is deferred ("thinking…") and edited in when ready:
   * Discord drops an interaction not acknowledged within 3 s.
   */
  readonly deferAfterMs?: number;
  /** How many delivered message ids (and deleted ids, and edits) are remembered to drop gateway replays. */
  readonly recentMessageIds?: number;
  /** Typing is sent again this often until the reply is posted (Discord shows it for ~10 s). */
  readonly typingRefreshMs?: number;
  /** Typing stops this long after the last `typing` call if no reply was posted. */
  readonly typingMaxMs?: number;
  /**
   * How a failed lookup of a thread discord.js does not know (for a deletion or edit in it) is tried
   * again; by default `DEFAULT_CHANNEL_LOOKUP_RETRY`, 4 tries.
   */
  readonly channelLookupRetry?: Partial<ChannelLookupRetry>;
}

type DiscordAdapterDefaults = Pick<
  DiscordAdapterOptions,
  'guildIdsForCommands' | 'deferAfterMs' | 'recentMessageIds' | 'typingRefreshMs' | 'typingMaxMs'
>;

export const DEFAULT_DISCORD_ADAPTER_OPTIONS = {
  guildIdsForCommands: [],
  deferAfterMs: 2_000,
  recentMessageIds: 2_000,
  typingRefreshMs: 8_000,
  typingMaxMs: 120_000,
} as const satisfies Required<DiscordAdapterDefaults>;

/** Replies may ping users the text names, never @everyone, @here or roles. */
const ALLOWED_MENTIONS = { parse: ['users' as const] };
const COMMAND_FAILED = 'Sorry, that command failed. Please try again in a moment.';
const COMMAND_EMPTY = 'Done.';

type CommandOutcome =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly err: unknown };

export class DiscordAdapter implements PlatformAdapter {
  readonly platform = 'discord' as const;
  readonly #options: DiscordAdapterOptions & Required<DiscordAdapterDefaults>;
  readonly #log: Logger;
  /** Ids of the last messages delivered: a RESUME may replay a dispatch already handled. */
  readonly #recent: LruMap<string, true>;
  readonly #typing: TypingKeepAlive;
  readonly #changes: DiscordMessageChanges;
  #client: Client | undefined;
  #handlers: PlatformHandlers | undefined;

  constructor(options: DiscordAdapterOptions) {
    if (options.token.trim() === '') {
      throw new DiscordError('the Discord bot token is empty', { code: 'discord_token_missing' });
    }
    this.#options = { ...DEFAULT_DISCORD_ADAPTER_OPTIONS, ...options };
    this.#log = options.logger ?? SILENT_LOGGER;
    this.#recent = new LruMap(this.#options.recentMessageIds);
    this.#typing = new TypingKeepAlive({
      refreshMs: this.#options.typingRefreshMs,
      maxMs: this.#options.typingMaxMs,
      log: this.#log,
    });
    this.#changes = new DiscordMessageChanges({
      log: this.#log,
      recent: this.#options.recentMessageIds,
      botName: options.botName,
      lookupRetry: options.channelLookupRetry,
    });
  }

  async start(handlers: PlatformHandlers): Promise<void> {
    if (this.#client)
      throw new DiscordError('the Discord adapter is already started', { code: 'already_started' });
    const client = new Client(this.#clientOptions());
    this.#client = client;
    this.#handlers = handlers;
    this.#listen(client);
    this.#changes.listen(client, handlers);
    const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
    try {
      await client.login(this.#options.token);
      await ready;
      await this.#registerCommands(client);
    } catch (err) {
      this.#client = undefined;
      this.#handlers = undefined;
      await client.destroy();
      throw toEbbError(err, { doing: 'connect to Discord' });
    }
    this.#log.info(
      { event: 'discord.connected', botId: client.user?.id, guilds: client.guilds.cache.size },
      'discord connected',
    );
  }

  async send(channelKey: string, text: string): Promise<{ readonly platformMessageId: string }> {
    const chunks = splitMessage(text, DISCORD_MESSAGE_LIMIT);
    const [first, ...more] = chunks;
    if (first === undefined) {
      throw new DiscordError(`cannot post an empty message to ${channelKey}`, { code: 'empty_message' });
    }
    // Posting ends Discord's indicator; a refresh between the chunks would show it again.
    this.#typing.stop(channelKey, 'sent');
    const channel = await this.#sendableChannel(channelKey);
    const post = async (content: string): Promise<string> => {
      try {
        const message = await channel.send({ content, allowedMentions: ALLOWED_MENTIONS });
        return message.id;
      } catch (err) {
        throw toEbbError(err, { doing: `post to ${channelKey}` });
      }
    };
    const platformMessageId = await post(first);
    for (const chunk of more) await post(chunk);
    return { platformMessageId };
  }

  /** Shows typing and keeps it up until the reply is posted (`typing-keep-alive.ts`). */
  async typing(channelKey: string): Promise<void> {
    let channel: SendableChannels;
    try {
      channel = await this.#sendableChannel(channelKey);
    } catch (err) {
      this.#log.debug(
        { event: 'discord.typing_failed', err, channel: channelKey },
        'discord typing indicator failed',
      );
      return;
    }
    await this.#typing.start(channelKey, () => channel.sendTyping());
  }

  async stop(): Promise<void> {
    this.#typing.stopAll();
    this.#changes.stop();
    const client = this.#client;
    this.#client = undefined;
    this.#handlers = undefined;
    if (client) await client.destroy();
  }

  #clientOptions(): ClientOptions {
    return {
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      // DM channels are not announced by the gateway; discord.js builds them from the first message.
      // With no message cached, a deleted or edited message is reported as a partial.
      partials: [Partials.Channel, Partials.Message],
      // The adapter never reads cached messages, so none are kept (#recent remembers the ids).
      makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
      allowedMentions: ALLOWED_MENTIONS,
      ...(this.#options.restApi === undefined ? {} : { rest: { api: this.#options.restApi } }),
    };
  }

  #listen(client: Client): void {
    client.on(Events.MessageCreate, (message) => this.#onMessage(client, message));
    client.on(Events.InteractionCreate, (interaction) => {
      void this.#onInteraction(interaction);
    });
    client.on(Events.ShardDisconnect, (event, shardId) =>
      this.#log.warn(
        { event: 'discord.disconnected', shardId, code: event.code },
        'discord gateway closed for good',
      ),
    );
    client.on(Events.ShardReconnecting, (shardId) =>
      this.#log.info({ event: 'discord.reconnecting', shardId }, 'discord gateway reconnecting'),
    );
    client.on(Events.ShardResume, (shardId, replayed) =>
      this.#log.info({ event: 'discord.resumed', shardId, replayed }, 'discord gateway session resumed'),
    );
    client.on(Events.ShardError, (err, shardId) =>
      this.#log.warn({ event: 'discord.gateway_failed', err, shardId }, 'discord gateway error'),
    );
    client.on(Events.Error, (err) =>
      this.#log.error({ event: 'discord.client_failed', err }, 'discord client error'),
    );
    client.on(Events.Warn, (warning) =>
      this.#log.warn({ event: 'discord.client_warned', warning }, 'discord client warning'),
    );
  }

  #onMessage(client: Client, message: Message): void {
    const handlers = this.#handlers;
    const bot = client.user;
    if (!handlers || !bot || message.author.id === bot.id || message.system) return;
    const repeat = this.#recent.has(message.id);
    this.#recent.set(message.id, true);
    if (repeat) {
      this.#log.debug(
        { event: 'discord.message_duplicate', messageId: message.id },
        'discord message delivered again; dropped',
      );
      return;
    }
    const inbound = toInboundMessage(message, bot.id, this.#options.botName ?? bot.displayName);
    settle(() => handlers.onMessage(inbound)).catch((err: unknown) => {
      this.#log.error(
        { event: 'discord.message_failed', err, channel: inbound.channelKey, messageId: message.id },
        'discord message handler failed',
      );
    });
  }

  async #onInteraction(interaction: Interaction): Promise<void> {
    const handlers = this.#handlers;
    if (!handlers || !interaction.isChatInputCommand() || !isEbbCommand(interaction.commandName)) return;
    const thread = interaction.channel?.isThread() ? interaction.channel.parentId : null;
    const channelKey = discordChannelKey(interaction.guildId, interaction.channelId, thread);
    const command: CommandInvocation = {
      platform: 'discord',
      name: interaction.commandName,
      channelKey,
      userId: interaction.user.id,
      args:
        interaction.commandName === 'compact'
          ? (interaction.options.getString(FOCUS_OPTION) ?? '').trim()
          : '',
    };
    try {
      await this.#answer(
        interaction,
        settle(() => handlers.onCommand(command)),
      );
    } catch (err) {
      this.#log.warn(
        { event: 'discord.command_reply_failed', err, channel: channelKey, command: command.name },
        'discord command reply failed',
      );
    }
  }

  async #answer(interaction: ChatInputCommandInteraction, pending: Promise<string>): Promise<void> {
    const outcome = pending.then(
      (text): CommandOutcome => ({ ok: true, text }),
      (err: unknown): CommandOutcome => ({ ok: false, err }),
    );
    let result = await within(outcome, this.#options.deferAfterMs);
    const deferred = result === undefined;
    if (deferred) await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    result ??= await outcome;
    if (!result.ok) {
      this.#log.error(
        {
          event: 'discord.command_failed',
          err: result.err,
          command: interaction.commandName,
          channelId: interaction.channelId,
        },
        'discord command failed',
      );
    }
    const [first = COMMAND_EMPTY, ...more] = splitMessage(result.ok ? result.text : COMMAND_FAILED);
    if (deferred) await interaction.editReply({ content: first, allowedMentions: { parse: [] } });
    else
      await interaction.reply({
        content: first,
        flags: MessageFlags.Ephemeral,
        allowedMentions: { parse: [] },
      });
    for (const content of more) {
      await interaction.followUp({ content, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
    }
  }

  async #registerCommands(client: Client): Promise<void> {
    const applicationId = this.#options.applicationId ?? client.application?.id ?? client.user?.id;
    if (!applicationId)
      throw new DiscordError('the Discord application id is unknown', { code: 'discord_no_application' });
    const body = ebbCommands();
    const guildIds = this.#options.guildIdsForCommands;
    const routes =
      guildIds.length === 0
        ? [Routes.applicationCommands(applicationId)]
        : guildIds.map((guildId) => Routes.applicationGuildCommands(applicationId, guildId));
    for (const route of routes) {
      try {
        await client.rest.put(route, { body });
      } catch (err) {
        throw toEbbError(err, { doing: 'register the /context and /compact commands' });
      }
    }
    this.#log.info(
      { event: 'discord.commands_registered', scope: guildIds.length === 0 ? 'global' : guildIds },
      'discord commands registered',
    );
  }

  async #sendableChannel(channelKey: string): Promise<SendableChannels> {
    const client = this.#client;
    if (!client) throw new DiscordError('the Discord adapter is not started', { code: 'not_started' });
    const { channelId } = parseDiscordChannelKey(channelKey);
    let channel: Awaited<ReturnType<Client['channels']['fetch']>>;
    try {
      channel = await client.channels.fetch(channelId);
    } catch (err) {
      throw toEbbError(err, { doing: `find ${channelKey}` });
    }
    if (!channel?.isSendable()) {
      throw new DiscordError(`the bot cannot post in ${channelKey}`, {
        code: 'discord_channel_not_sendable',
      });
    }
    return channel;
  }
}

function toInboundMessage(message: Message, botId: string, botName: string): InboundMessage {
  return {
    platform: 'discord',
    channelKey: messageChannelKey(message),
    platformMessageId: message.id,
    authorId: message.author.id,
    authorName: message.member?.displayName ?? message.author.displayName,
    fromBot: message.author.bot || message.webhookId !== null,
    text: rewriteBotMentions(message.content, botId, botName),
    ts: message.createdAt.toISOString(),
    mentionsBot: message.mentions.users.has(botId) || hasBotMention(message.content, botId),
    direct: message.guildId === null,
  };
}

/** `promise`'s value, or undefined when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  const outcome = await settleWithin(promise, ms);
  return outcome.done ? outcome.value : undefined;
}
