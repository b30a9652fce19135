/**
 * What the Slack adapter is configured with, its defaults, and the checks that refuse options that
 * cannot work before anything connects (every problem at once, never a token's secret part).
 */
import type { Logger } from '@ebb/core';
import type { SuggestedPrompt } from './assistant-threads.js';
import { SLACK_MESSAGE_LIMIT } from './split-mrkdwn.js';

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
  /** HTTP mode: the largest request body read, in bytes; a larger one is read up to it, then answered 413. */
  readonly maxBodyBytes?: number;
  /** The Web API base URL (tests point it at a fake). */
  readonly slackApiUrl?: string;
  /** The name mentions of the bot become (`@ebb`); the bot user's handle from `auth.test` by default. */
  readonly botName?: string;
  readonly logger?: Logger;
  /** The reaction `typing` puts on the message being answered; `false` turns the indicator off. */
  readonly typingReaction?: string | false;
  /**
   * In an assistant thread (Slack's AI-app surface), `typing` shows this status line instead of the
   * reaction; `false` leaves the surface to Bolt's defaults off (assistant threads are then ordinary
   * DM threads, with the reaction).
   */
  readonly assistantStatus?: string | false;
  /** Offered when an assistant thread starts (at most 4 are shown); empty: none. */
  readonly suggestedPrompts?: readonly SuggestedPrompt[];
  /** The longest message posted; a longer reply is split (see `split-mrkdwn.ts` for the default). */
  readonly messageLimit?: number;
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
  assistantStatus: 'is thinking…',
  suggestedPrompts: [
    { title: 'What can you do?', message: 'What can you help me with?' },
    { title: 'Sum up', message: 'Sum up what we have talked about so far.' },
  ],
  messageLimit: SLACK_MESSAGE_LIMIT,
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
    | 'assistantStatus'
    | 'suggestedPrompts'
    | 'messageLimit'
    | 'commandReplyTimeoutMs'
    | 'socketPingTimeoutMs'
    | 'maxBodyBytes'
    | 'dedupeCapacity'
  >
>;

/** Every reason these options cannot work, as sentence fragments; empty when they can. */
export function slackAdapterOptionProblems(options: SlackAdapterOptions): string[] {
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
