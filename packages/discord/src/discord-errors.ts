/**
 * Maps errors from discord.js and its REST client to `EbbError` at the adapter edge. The messages
 * carry Discord's own wording and status, never the token or request bodies.
 *
 * | code                           | when                                                 | retryable |
 * | ------------------------------ | ---------------------------------------------------- | --------- |
 * | `not_started`                  | `send` before `start`                                | no        |
 * | `already_started`              | a second `start`                                     | no        |
 * | `invalid_channel_key`          | a key that is not `discord:<guild|dm>:<channel>[:<thread>]` | no |
 * | `empty_message`                | `send` with nothing to post                          | no        |
 * | `discord_token_missing`        | an empty bot token                                   | no        |
 * | `discord_token_invalid`        | Discord rejected the token at login                  | no        |
 * | `discord_no_application`       | no application id to register the commands under    | no        |
 * | `discord_channel_not_sendable` | the channel exists but the bot cannot post in it     | no        |
 * | `discord_channel_unknown`      | discord.js cannot build the channel Discord described (its guild not in the cache, a type it does not know) | no |
 * | `discord_unauthorized`         | REST 401                                             | no        |
 * | `discord_forbidden`            | REST 403                                             | no        |
 * | `discord_not_found`            | REST 404                                             | no        |
 * | `discord_api_error`            | any other REST answer                                | 429, 5xx  |
 * | `discord_rate_limited`         | discord.js gave up waiting out a rate limit          | yes       |
 * | `discord_http_error`           | an HTTP failure below the API (a proxy's 502)        | 5xx       |
 * | `discord_unavailable`          | anything else (the gateway, the network)             | yes       |
 */
import { COMMON_ERROR_CODES, EbbError, type ErrorContext, errorText } from '@ebb/core';
import { DiscordAPIError, DiscordjsError, DiscordjsErrorCodes, HTTPError, RateLimitError } from 'discord.js';

export const DISCORD_ERROR_CODES = [
  ...COMMON_ERROR_CODES,
  'empty_message',
  'discord_token_missing',
  'discord_token_invalid',
  'discord_no_application',
  'discord_channel_not_sendable',
  'discord_channel_unknown',
  'discord_unauthorized',
  'discord_forbidden',
  'discord_not_found',
  'discord_api_error',
  'discord_rate_limited',
  'discord_http_error',
  'discord_unavailable',
] as const;
export type DiscordErrorCode = (typeof DISCORD_ERROR_CODES)[number];

/** An error from the Discord adapter, with one of `DISCORD_ERROR_CODES`. */
export class DiscordError extends EbbError<DiscordErrorCode> {}

/**
 * Maps what discord.js threw; `doing` completes "could not …" (`post to discord:1:2`), `code`
 * replaces the one picked from the error.
 */
export function toEbbError(err: unknown, context: ErrorContext<DiscordErrorCode>): EbbError {
  if (err instanceof EbbError) return err;
  const mapped = classify(err, context.doing);
  return context.code === undefined
    ? mapped
    : new DiscordError(mapped.message, { code: context.code, retryable: mapped.retryable, cause: err });
}

function classify(err: unknown, action: string): DiscordError {
  if (err instanceof DiscordAPIError) {
    const { status } = err;
    const code =
      status === 401
        ? 'discord_unauthorized'
        : status === 403
          ? 'discord_forbidden'
          : status === 404
            ? 'discord_not_found'
            : 'discord_api_error';
    return new DiscordError(`could not ${action}: Discord answered ${status} (${err.code}) ${err.message}`, {
      code,
      retryable: status === 429 || status >= 500,
      cause: err,
    });
  }
  if (err instanceof RateLimitError) {
    return new DiscordError(`could not ${action}: rate limited by Discord for ${err.retryAfter} ms`, {
      code: 'discord_rate_limited',
      retryable: true,
      cause: err,
    });
  }
  if (err instanceof HTTPError) {
    return new DiscordError(`could not ${action}: Discord answered ${err.status} ${err.message}`, {
      code: 'discord_http_error',
      retryable: err.status >= 500,
      cause: err,
    });
  }
  if (err instanceof DiscordjsError && err.code === DiscordjsErrorCodes.TokenInvalid) {
    return new DiscordError(`could not ${action}: Discord rejected the bot token`, {
      code: 'discord_token_invalid',
      cause: err,
    });
  }
  return new DiscordError(`could not ${action}: ${errorText(err)}`, {
    code: 'discord_unavailable',
    retryable: true,
    cause: err,
  });
}
