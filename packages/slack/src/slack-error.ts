/**
 * Maps `@slack/web-api` errors to `EbbError` at the adapter edge. A refusal from Slack
 * (`channel_not_found`, `not_in_channel`, `invalid_auth`) will not change on retry; rate limits,
 * network failures and 5xx answers might.
 */
import { COMMON_ERROR_CODES, EbbError, type ErrorContext, errorText } from '@ebb/core';

/**
 * | code                   | when                                                           | retryable |
 * | ---------------------- | -------------------------------------------------------------- | --------- |
 * | `not_started`          | `send` before `start`                                          | no        |
 * | `already_started`      | a second `start`                                               | no        |
 * | `invalid_channel_key`  | `send` to a key that is not `slack:<team>:<channel>[:<ts>]`    | no        |
 * | `slack_config_invalid` | adapter options that cannot work (a missing token or secret)   | no        |
 * | `slack_auth_failed`    | `auth.test` failed or did not name the bot                     | by cause  |
 * | `slack_connect_failed` | the Socket Mode or HTTP receiver did not start                 | by cause  |
 * | `slack_send_failed`    | `chat.postMessage` failed or returned no `ts`                  | by cause  |
 * | `slack_api_error`      | any other Web API call (no `code` given to `toEbbError`)       | by cause  |
 */
export const SLACK_ERROR_CODES = [
  ...COMMON_ERROR_CODES,
  'slack_config_invalid',
  'slack_auth_failed',
  'slack_connect_failed',
  'slack_send_failed',
  'slack_api_error',
] as const;
export type SlackErrorCode = (typeof SLACK_ERROR_CODES)[number];

/** An error from the Slack adapter, with one of `SLACK_ERROR_CODES`. */
export class SlackError extends EbbError<SlackErrorCode> {}

/** The Slack error string (`channel_not_found`), when Slack answered `ok: false`. */
export function slackErrorString(err: unknown): string | undefined {
  if (!isCoded(err) || err.code !== 'slack_webapi_platform_error') return undefined;
  const data = (err as { data?: { error?: unknown } }).data;
  return typeof data?.error === 'string' ? data.error : undefined;
}

/**
 * Maps what a Web API call threw; `doing` names the call (`chat.postMessage`), `code` says which
 * step failed (`slack_send_failed`; `slack_api_error` when not given). The code is the step's, not
 * the cause's: `retryable` and the message say whether Slack refused, rate-limited or was away.
 */
export function toEbbError(err: unknown, context: ErrorContext<SlackErrorCode>): EbbError {
  if (err instanceof EbbError) return err;
  const { doing } = context;
  const code = context.code ?? 'slack_api_error';
  const refusal = slackErrorString(err);
  if (refusal !== undefined) {
    return new SlackError(`Slack refused ${doing}: ${refusal}`, { code, retryable: false, cause: err });
  }
  if (isCoded(err)) {
    switch (err.code) {
      case 'slack_webapi_rate_limited_error':
        return new SlackError(`Slack rate-limited ${doing}`, { code, retryable: true, cause: err });
      case 'slack_webapi_request_error':
        return new SlackError(`Slack could not be reached for ${doing}`, {
          code,
          retryable: true,
          cause: err,
        });
      case 'slack_webapi_http_error': {
        const status = (err as { statusCode?: unknown }).statusCode;
        const retryable = typeof status === 'number' && (status >= 500 || status === 429);
        return new SlackError(`Slack answered HTTP ${String(status)} to ${doing}`, {
          code,
          retryable,
          cause: err,
        });
      }
      default:
        break;
    }
  }
  return new SlackError(`${doing} failed: ${errorText(err)}`, {
    code,
    retryable: false,
    cause: err,
  });
}

function isCoded(err: unknown): err is Error & { readonly code: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}
