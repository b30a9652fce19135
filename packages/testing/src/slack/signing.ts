/**
 * Slack's request signing (v0): `x-slack-signature: v0=HMAC-SHA256(signingSecret, "v0:{ts}:{body}")`
 * with the Unix seconds of `x-slack-request-timestamp`. Receivers reject a timestamp older than five
 * minutes.
 */
import { createHmac } from 'node:crypto';

export function signSlackRequest(signingSecret: string, timestampSeconds: number, body: string): string {
  const hmac = createHmac('sha256', signingSecret).update(`v0:${timestampSeconds}:${body}`);
  return `v0=${hmac.digest('hex')}`;
}
