/**
 * Maps errors from discord.js and its REST client to `EbbError` at the adapter edge. The messages
 * carry Discord's own wording and status, never the token or request bodies.
 */
import { EbbError } from '@ebb/core';
import { DiscordAPIError, DiscordjsError, DiscordjsErrorCodes, HTTPError, RateLimitError } from 'discord.js';

/** `action` completes "could not …", e.g. `post to discord:1:2`. */
export function toEbbError(err: unknown, action: string): EbbError {
  if (err instanceof EbbError) return err;
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
    return new EbbError(`could not ${action}: Discord answered ${status} (${err.code}) ${err.message}`, {
      code,
      retryable: status === 429 || status >= 500,
      cause: err,
    });
  }
  if (err instanceof RateLimitError) {
    return new EbbError(`could not ${action}: rate limited by Discord for ${err.retryAfter} ms`, {
      code: 'discord_rate_limited',
      retryable: true,
      cause: err,
    });
  }
  if (err instanceof HTTPError) {
    return new EbbError(`could not ${action}: Discord answered ${err.status} ${err.message}`, {
      code: 'discord_http_error',
      retryable: err.status >= 500,
      cause: err,
    });
  }
  if (err instanceof DiscordjsError && err.code === DiscordjsErrorCodes.TokenInvalid) {
    return new EbbError(`could not ${action}: Discord rejected the bot token`, {
      code: 'discord_token_invalid',
      cause: err,
    });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new EbbError(`could not ${action}: ${message}`, {
    code: 'discord_unavailable',
    retryable: true,
    cause: err,
  });
}
