/**
 * The two ways Slack reaches Ebb, as Bolt receivers: Socket Mode (an outbound WebSocket, no public
 * URL) or the Events API (an HTTP server Slack POSTs signed requests to, with a body limit).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Logger, settleWithin } from '@ebb/core';
import { type Logger as BoltLogger, HTTPReceiver, SocketModeReceiver } from '@slack/bolt';
import { DEFAULT_SLACK_ADAPTER, type SlackAdapterOptions } from './slack-adapter-options.js';
import { SlackError } from './slack-error.js';

/** The path Bolt's HTTP receiver serves events and commands on. */
export const SLACK_EVENTS_PATH = '/slack/events';

const STOP_TIMEOUT_MS = 5_000;

export type SlackReceiver = HTTPReceiver | SocketModeReceiver;

/** The receiver for `options.mode`, not yet started. */
export function createSlackReceiver(
  options: SlackAdapterOptions,
  slackApiUrl: string,
  logger: BoltLogger,
): SlackReceiver {
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
        // Bolt 5.1 reads the body (raw-body, not told the declared length) until it passes this
        // limit, then answers 413: a declared length over it is not refused from the header.
        bodyLimit: options.maxBodyBytes ?? DEFAULT_SLACK_ADAPTER.maxBodyBytes,
      });
    default: {
      const exhaustive: never = options.mode;
      throw new SlackError(`Unknown Slack mode ${String(exhaustive)}`, { code: 'slack_config_invalid' });
    }
  }
}

/**
 * Connects Socket Mode, or starts listening for the Events API; for the latter, gives the local URL
 * of the receiver (`http://host:port/slack/events`).
 */
export async function startSlackReceiver(
  receiver: SlackReceiver,
  options: SlackAdapterOptions,
): Promise<string | undefined> {
  if (!(receiver instanceof HTTPReceiver)) {
    await receiver.start();
    return undefined;
  }
  const host = options.host ?? DEFAULT_SLACK_ADAPTER.host;
  const server = await receiver.start({ port: options.port ?? DEFAULT_SLACK_ADAPTER.port, host });
  // Bolt answers 413 once it has read past the limit, and Node would then read and discard the rest
  // of the body to keep the connection alive. For a body declared over the limit, close the
  // connection after the answer instead, so the client stops sending (a chunked one is drained).
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_SLACK_ADAPTER.maxBodyBytes;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes) res.setHeader('Connection', 'close');
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${port}${SLACK_EVENTS_PATH}`;
}

/** Stops listening, or closes the socket; never throws (a receiver that never started is fine). */
export async function stopSlackReceiver(receiver: SlackReceiver, log: Logger): Promise<void> {
  try {
    if (receiver instanceof HTTPReceiver) {
      await receiver.stop();
    } else {
      // SocketModeReceiver.stop() does not wait for the socket to close; the client's disconnect does.
      await settleWithin(receiver.client.disconnect(), STOP_TIMEOUT_MS);
    }
  } catch (err) {
    log.debug({ event: 'slack.receiver_stop_failed', err }, 'slack receiver stop failed (already stopped?)');
  }
}
