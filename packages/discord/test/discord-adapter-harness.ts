/**
 * The harness the DiscordAdapter tests share: the real discord.js client against FakeDiscord (REST
 * and gateway on 127.0.0.1), with recording handlers and a recording logger. Both are stopped when
 * the test finishes.
 */
import type { CommandInvocation, InboundMessage, MessageChange } from '@ebb/core';
import { FakeDiscord } from '@ebb/testing/discord';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { onTestFinished } from 'vitest';
import { DiscordAdapter, type DiscordAdapterOptions } from '../src/discord-adapter.js';

export interface SetupOptions {
  readonly adapter?: (fake: FakeDiscord) => Partial<DiscordAdapterOptions>;
  readonly onCommand?: (command: CommandInvocation) => Promise<string>;
  /** Replaces recording the change; it is recorded in `changes` first either way. */
  readonly onMessageChange?: (change: MessageChange) => Promise<void>;
}

export async function setup(options: SetupOptions = {}) {
  const fake = await FakeDiscord.start();
  const logger = new RecordingLogger();
  const logs = logger.entries;
  const messages: InboundMessage[] = [];
  const commands: CommandInvocation[] = [];
  const changes: MessageChange[] = [];
  const adapter = new DiscordAdapter({
    token: fake.token,
    restApi: fake.restApi,
    logger,
    ...options.adapter?.(fake),
  });
  onTestFinished(async () => {
    await adapter.stop();
    await fake.close();
  });
  await adapter.start({
    onMessage: async (message) => {
      messages.push(message);
      return undefined;
    },
    onMessageChange: async (change) => {
      changes.push(change);
      await options.onMessageChange?.(change);
    },
    onCommand: async (command) => {
      commands.push(command);
      return options.onCommand ? options.onCommand(command) : `${command.name} for ${command.channelKey}`;
    },
  });
  const alice = fake.createUser({ username: 'alice', globalName: 'Alice Liddell' });
  const general = fake.guild.channel('general');
  const thread = fake.guild.channel('deploy-plan');
  return { fake, adapter, messages, commands, changes, logger, logs, alice, general, thread };
}
