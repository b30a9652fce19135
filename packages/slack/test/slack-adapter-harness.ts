/**
 * The harness the SlackAdapter tests share: the real Bolt (Socket Mode or the Events API) against
 * FakeSlack, with recording handlers and a recording logger. Absence is never asserted after a
 * sleep: every dropped event leaves a `slack.message_ignored` log line to wait for, and a rejected
 * HTTP request is rejected before Bolt sees it.
 *
 * A test file calls `afterEach(stopHarnesses)` to stop every harness it started.
 */
import type {
  CommandInvocation,
  InboundMessage,
  MessageChange,
  MessageChangeResult,
  PlatformHandlers,
  TurnResult,
} from '@ebb/core';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { FAKE_SLACK, FakeSlack, type SlackEventPayload, type SlashCommandPayload } from '@ebb/testing/slack';
import { expect, vi } from 'vitest';
import { SlackAdapter, type SlackAdapterOptions } from '../src/slack-adapter.js';

export const BOT_TOKEN = 'xoxb-1-test-bot-token-secret';
export const APP_TOKEN = 'xapp-1-test-app-token-secret';
export const SIGNING_SECRET = 'test-signing-secret-0123456789';
export const TEAM = FAKE_SLACK.teamId;
export const GENERAL = FAKE_SLACK.channels.general;
export const ALICE_DM = FAKE_SLACK.channels.aliceDm;

export class SlackLog extends RecordingLogger {
  /** The reasons logged for dropping the message with this ts. */
  ignored(ts: string | undefined): unknown[] {
    return this.events('slack.message_ignored')
      .filter((e) => e.fields.ts === ts)
      .map((e) => e.fields.reason);
  }
}

export class RecordingHandlers implements PlatformHandlers {
  readonly messages: InboundMessage[] = [];
  readonly commands: CommandInvocation[] = [];
  readonly changes: MessageChange[] = [];
  reply: (command: CommandInvocation) => Promise<string> = async (c) => `${c.name} answered (${c.args})`;
  onMessage = async (message: InboundMessage): Promise<TurnResult | undefined> => {
    this.messages.push(message);
    return undefined;
  };
  onMessageChange?: (change: MessageChange) => Promise<MessageChangeResult | undefined> = async (change) => {
    this.changes.push(change);
    return undefined;
  };
  onCommand = async (command: CommandInvocation): Promise<string> => {
    this.commands.push(command);
    return this.reply(command);
  };
}

export type Mode = SlackAdapterOptions['mode'];

export interface Harness {
  readonly slack: FakeSlack;
  readonly adapter: SlackAdapter;
  readonly handlers: RecordingHandlers;
  readonly log: SlackLog;
  /** Delivers an event the way the mode does and waits until Slack has its ack. */
  deliver(event: SlackEventPayload, retry?: number): Promise<void>;
  /** Runs a slash command and returns the ack body (the immediate answer). */
  command(payload: SlashCommandPayload): Promise<Record<string, unknown> | undefined>;
}

const running: Harness[] = [];

export async function startHarness(mode: Mode, extra: Partial<SlackAdapterOptions> = {}): Promise<Harness> {
  const slack = await FakeSlack.start();
  const log = new SlackLog();
  const handlers = new RecordingHandlers();
  const adapter = new SlackAdapter({
    mode,
    botToken: BOT_TOKEN,
    ...(mode === 'socket'
      ? { appToken: APP_TOKEN, socketPingTimeoutMs: 200 }
      : { signingSecret: SIGNING_SECRET, port: 0, host: '127.0.0.1' }),
    slackApiUrl: slack.apiUrl,
    logger: log,
    ...extra,
  });
  await adapter.start(handlers);
  const eventsUrl = adapter.eventsUrl ?? '';
  const harness: Harness = {
    slack,
    adapter,
    handlers,
    log,
    async deliver(event, retry) {
      if (mode === 'socket') {
        const id = slack.deliver(event, retry === undefined ? {} : { retryAttempt: retry });
        await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined());
        return;
      }
      const options = { signingSecret: SIGNING_SECRET, ...(retry === undefined ? {} : { retryNum: retry }) };
      const response = await slack.sendEvent(eventsUrl, event, options);
      expect(response.status).toBe(200);
    },
    async command(payload) {
      if (mode === 'socket') {
        const id = slack.deliverCommand(payload);
        await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined());
        return slack.ackFor(id)?.payload;
      }
      const response = await slack.sendCommand(eventsUrl, payload, { signingSecret: SIGNING_SECRET });
      expect(response.status).toBe(200);
      return response.text === '' ? undefined : (response.json as Record<string, unknown>);
    },
  };
  running.push(harness);
  return harness;
}

/** Stops every harness started since the last call, and its FakeSlack. */
export async function stopHarnesses(): Promise<void> {
  for (const h of running.splice(0)) {
    await h.adapter.stop();
    await h.slack.close();
  }
}
