/**
 * The application (slash) commands the adapter registers: `/context` and `/compact focus:<text>`,
 * usable in guild channels, threads and DMs with the bot.
 */
import type { CommandName } from '@ebb/core';
import {
  InteractionContextType,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
  SlashCommandBuilder,
} from 'discord.js';

export const FOCUS_OPTION = 'focus';

/** Discord allows up to 6,000 characters per option value; a focus is a phrase. */
const MAX_FOCUS_LENGTH = 500;

export function ebbCommands(): RESTPostAPIChatInputApplicationCommandsJSONBody[] {
  const where = [InteractionContextType.Guild, InteractionContextType.BotDM];
  return [
    new SlashCommandBuilder()
      .setName('context' satisfies CommandName)
      .setDescription("Show what the bot keeps of this channel's conversation and how full its context is")
      .setContexts(where)
      .toJSON(),
    new SlashCommandBuilder()
      .setName('compact' satisfies CommandName)
      .setDescription("Summarize this channel's older messages now")
      .setContexts(where)
      .addStringOption((option) =>
        option
          .setName(FOCUS_OPTION)
          .setDescription('What the summary should keep in detail')
          .setRequired(false)
          .setMaxLength(MAX_FOCUS_LENGTH),
      )
      .toJSON(),
  ];
}

export function isEbbCommand(name: string): name is CommandName {
  return name === 'context' || name === 'compact';
}
