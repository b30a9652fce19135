/**
 * The platforms part: the web channel (refused before anything opens when exposed without a token),
 * and Slack and Discord when their tokens are set (announced when neither is). The bot starts and
 * stops them (bot.ts).
 */
import type { PlatformAdapter } from '@ebb/core';
import { exposure, WebAdapter } from '@ebb/web';
import type { StartOptions } from './options.js';
import { StartRefusedError } from './start-failure.js';

/**
 * The web channel is open only as far as the settings say: a `[web] host` beyond loopback without
 * EBB_ADMIN_TOKEN refuses to start unless `[web] public_api` opens the API on purpose (a warning at
 * every start).
 */
export function checkExposure(options: StartOptions): void {
  const { env, logger } = options;
  const settings = options.config().web;
  const exposed = exposure({
    host: settings.host,
    port: settings.port,
    adminToken: env.EBB_ADMIN_TOKEN,
    publicApi: settings.public_api,
  });
  switch (exposed.kind) {
    case 'refused':
      throw new StartRefusedError(exposed.reason, exposed.hint);
    case 'open_api':
      logger.warn({ event: 'web.public_api' }, exposed.warning);
      break;
    case 'private':
      break;
  }
}

export function webAdapter(options: StartOptions): WebAdapter {
  const { env } = options;
  const settings = options.config().web;
  return new WebAdapter({
    host: settings.host,
    port: options.webPort ?? settings.port,
    access: {
      adminToken: env.EBB_ADMIN_TOKEN,
      metricsToken: env.EBB_METRICS_TOKEN,
      publicApi: settings.public_api,
    },
    maxBodyBytes: settings.max_body_kb * 1024,
    rateLimit: { perMinute: settings.rate_limit_per_minute, burst: settings.rate_limit_burst },
    logger: options.logger,
  });
}

/** The web channel first, then Slack and Discord for the tokens that are set. */
export async function platformAdapters(options: StartOptions, web: WebAdapter): Promise<PlatformAdapter[]> {
  const { env, logger } = options;
  const adapters: PlatformAdapter[] = [web];
  const config = options.config();
  const overrides = options.platforms ?? {};
  const slackApiUrl = overrides.slackApiUrl ?? config.slack.api_url;
  // A platform's client library (Bolt, discord.js: most of a cold start) loads only with its token.
  if (env.SLACK_BOT_TOKEN !== undefined) {
    const { SlackAdapter } = await import('@ebb/slack');
    adapters.push(
      new SlackAdapter({
        mode: config.slack.mode,
        botToken: env.SLACK_BOT_TOKEN,
        ...(env.SLACK_APP_TOKEN === undefined ? {} : { appToken: env.SLACK_APP_TOKEN }),
        ...(env.SLACK_SIGNING_SECRET === undefined ? {} : { signingSecret: env.SLACK_SIGNING_SECRET }),
        // The Events API receiver listens next to the web channel.
        port: overrides.slackPort ?? config.web.port + 1,
        host: config.web.host,
        maxBodyBytes: config.web.max_body_kb * 1024,
        botName: 'ebb',
        logger,
        ...(slackApiUrl === undefined ? {} : { slackApiUrl }),
      }),
    );
  }
  if (env.DISCORD_TOKEN !== undefined) {
    const { DiscordAdapter } = await import('@ebb/discord');
    adapters.push(
      new DiscordAdapter({
        token: env.DISCORD_TOKEN,
        botName: 'ebb',
        logger,
        ...(overrides.discordRestApi === undefined ? {} : { restApi: overrides.discordRestApi }),
      }),
    );
  }
  if (adapters.length === 1) {
    logger.info(
      { event: 'ebb.fallback', part: 'platforms' },
      'no Slack or Discord token: only the web channel runs',
    );
  }
  return adapters;
}
