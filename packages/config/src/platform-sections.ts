/**
 * The platform sections, `[slack]`, `[discord]` and `[web]`: how Ebb connects to each and who
 * administers it there, and, in the same table, the overridable sections' layer for every channel
 * of that platform (`layerShape`, precedence level 3 in `index.ts`).
 */
import { z } from 'zod';
import { enumOf, mustBe, nonNegativeInt, positiveInt, TABLE, text } from './schema-leaves.js';
import { layerShape } from './settings-schema.js';

const admins = () => z.array(text('a user id'), mustBe('a list of user ids')).default([]);

export const slackSchema = z.strictObject(
  {
    mode: enumOf(['socket', 'http']).default('socket'),
    admins: admins(),
    /** The Web API base (an Enterprise proxy, a test fake); unset means https://slack.com/api/. */
    api_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    ...layerShape,
  },
  TABLE,
);
export const discordSchema = z.strictObject({ admins: admins(), ...layerShape }, TABLE);
export const webSchema = z.strictObject(
  {
    host: text('a host name or address').default('127.0.0.1'),
    port: (() => {
      const error = mustBe('a port number (1-65535)');
      return z.number(error).int(error).min(1, error).max(65_535, error);
    })().default(3000),
    /**
     * Opens the web channel's API (`/api/channels/*`) to anyone who reaches the port when
     * EBB_ADMIN_TOKEN is unset. Without it, a `host` beyond loopback needs EBB_ADMIN_TOKEN or Ebb
     * refuses to start. Logged as a warning at every start.
     */
    public_api: z.boolean(mustBe('true or false')).default(false),
    /** Largest request body the web channel (and Slack's Events API receiver) reads, in KiB; 413 past it. */
    max_body_kb: positiveInt().default(256),
    /**
     * Requests a client (by address) may make to the web channel's API per minute, and credentials it
     * may have refused on any route (a bucket of their own); 0: no limit.
     */
    rate_limit_per_minute: nonNegativeInt().default(120),
    /** Requests a client may make at once before the per-minute rate applies. */
    rate_limit_burst: positiveInt().default(60),
    ...layerShape,
  },
  TABLE,
);

export type SlackSection = z.output<typeof slackSchema>;
export type DiscordSection = z.output<typeof discordSchema>;
export type WebSection = z.output<typeof webSchema>;
