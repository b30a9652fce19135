export { type DiscordChannelRef, discordChannelKey, parseDiscordChannelKey } from './channel-key.js';
export { type ChannelLookupRetry, DEFAULT_CHANNEL_LOOKUP_RETRY } from './channel-lookup.js';
export { ebbCommands } from './commands.js';
export {
  DEFAULT_DISCORD_ADAPTER_OPTIONS,
  DiscordAdapter,
  type DiscordAdapterOptions,
} from './discord-adapter.js';
export { DISCORD_ERROR_CODES, DiscordError, type DiscordErrorCode } from './discord-errors.js';
export { DISCORD_MESSAGE_LIMIT, splitMessage } from './split-message.js';
