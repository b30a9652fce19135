/**
 * Maps `@slack/web-api` errors to `EbbError` at the adapter edge. A refusal from Slack
 * (`channel_not_found`, `not_in_channel`, `invalid_auth`) will not change on retry; rate limits,
 * network failures and 5xx answers might.
 */
import { EbbError } from '@ebb/core';

/** The Slack error string (`channel_not_found`), when Slack answered `ok: false`. */
export function slackErrorString(err: unknown): string | undefined {
  if (!isCoded(err) || err.code !== 'slack_webapi_platform_error') return undefined;
  const data = (err as { data?: { error?: unknown } }).data;
  return typeof data?.error === 'string' ? data.error : undefined;
}

export function toEbbError(err: unknown, call: string, code: string): EbbError {
  const refusal = slackErrorString(err);
  if (refusal !== undefined) {
    return new EbbError(`Slack refused ${call}: ${refusal}`, { code, retryable: false, cause: err });
  }
  if (isCoded(err)) {
    switch (err.code) {
      case 'slack_webapi_rate_limited_error':
        return new EbbError(`Slack rate-limited ${call}`, { code, retryable: true, cause: err });
      case 'slack_webapi_request_error':
        return new EbbError(`Slack could not be reached for ${call}`, { code, retryable: true, cause: err });
      case 'slack_webapi_http_error': {
        const status = (err as { statusCode?: unknown }).statusCode;
        const retryable = typeof status === 'number' && (status >= 500 || status === 429);
        return new EbbError(`Slack answered HTTP ${String(status)} to ${call}`, {
          code,
          retryable,
          cause: err,
        });
      }
      default:
        break;
    }
  }
  return new EbbError(`${call} failed: ${err instanceof Error ? err.message : String(err)}`, {
    code,
    retryable: false,
    cause: err,
  });
}

function isCoded(err: unknown): err is Error & { readonly code: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string';
}
