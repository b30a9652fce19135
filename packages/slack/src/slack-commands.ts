/**
 * Slash commands: `/context` and `/compact [focus]` answer ephemerally in the ack body, so Slack
 * gets its ack within 3 s; a command slower than `commandReplyTimeoutMs` is acked empty and
 * answered through its `response_url`. Anything else gets a help line.
 */
import {
  type CommandInvocation,
  type CommandName,
  type Logger,
  type PlatformHandlers,
  settleWithin,
} from '@ebb/core';
import { slackChannelKey } from './channel-key.js';
import { escapeSlackText } from './slack-text.js';

const COMMANDS: ReadonlyMap<string, CommandName> = new Map([
  ['/context', 'context'],
  ['/compact', 'compact'],
]);
const HELP =
  'Ebb knows two commands: `/context` shows what it keeps of this conversation, `/compact [focus]` summarizes it now.';
const COMMAND_FAILED = 'Sorry, that command failed. Please try again in a moment.';

/** The fields of Slack's slash command payload Ebb reads. */
export interface SlackSlashCommand {
  readonly command: string;
  readonly text: string;
  readonly channel_id: string;
  readonly user_id: string;
}

interface EphemeralAnswer {
  response_type: 'ephemeral';
  text: string;
}

export interface SlackCommandContext {
  readonly teamId: string;
  readonly handlers: PlatformHandlers;
  readonly log: Logger;
  /** How long the handler may take before the command is acked empty and answered later. */
  readonly replyTimeoutMs: number;
}

/** Runs one slash command through `handlers.onCommand` and answers it, in the ack or after it. */
export async function answerSlackCommand(
  context: SlackCommandContext,
  command: SlackSlashCommand,
  ack: (response?: EphemeralAnswer) => Promise<void>,
  respond: (message: EphemeralAnswer) => Promise<unknown>,
): Promise<void> {
  const { log } = context;
  const name = COMMANDS.get(command.command);
  if (!name) {
    await ack({ response_type: 'ephemeral', text: HELP });
    return;
  }
  const invocation: CommandInvocation = {
    platform: 'slack',
    name,
    channelKey: slackChannelKey({ teamId: context.teamId, channelId: command.channel_id }),
    userId: command.user_id,
    args: command.text.trim(),
  };
  const reply = context.handlers.onCommand(invocation).catch((err: unknown) => {
    log.error(
      { event: 'slack.command_failed', err, channel: invocation.channelKey, command: name },
      'slack command failed',
    );
    return COMMAND_FAILED;
  });
  const inTime = await settleWithin(reply, context.replyTimeoutMs);
  if (inTime.done) {
    await ack({ response_type: 'ephemeral', text: escapeSlackText(inTime.value) });
    return;
  }
  await ack();
  const text = escapeSlackText(await reply);
  try {
    await respond({ response_type: 'ephemeral', text });
  } catch (err) {
    log.warn(
      { event: 'slack.command_reply_failed', err, channel: invocation.channelKey, command: name },
      'slack command reply failed',
    );
  }
}
