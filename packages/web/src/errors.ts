/**
 * The codes of the web API's answers: part of its contract, so a client can branch on `code`
 * instead of the sentence in `error`. Every error body is `{"error": "…", "code": "…"}`.
 *
 * | code                | status | when                                                                                   |
 * | ------------------- | ------ | -------------------------------------------------------------------------------------- |
 * | `bad_channel_id`    | 400    | the `:id` is not letters, digits, `_ . -` (at most 100)                                |
 * | `bad_json`          | 400    | the body is not a JSON object                                                          |
 * | `bad_id`            | 400    | `"id"` is empty, too long, `.` or `..`; a DELETE/PUT id: too long, NUL, lone surrogate |
 * | `bad_author`        | 400    | `"author"` is empty, too long, or has control/bidi characters                          |
 * | `bad_text`          | 400    | `"text"` is empty or too long                                                          |
 * | `bad_command`       | 400    | `"name"` is not a command                                                              |
 * | `bad_user`          | 400    | `"user"` is empty, too long, or has control/bidi characters                            |
 * | `nul_character`     | 400    | a NUL in `"author"`, `"text"` or `"id"` (Postgres cannot store it)                     |
 * | `lone_surrogate`    | 400    | an unpaired surrogate in `"author"`, `"text"` or `"id"` (it would be kept as U+FFFD)   |
 * | `bad_query`         | 400    | a dashboard query parameter is not what the route takes                                |
 * | `unauthorized`      | 401    | no token, or the wrong one                                                             |
 * | `forbidden`         | 403    | the route answers only on loopback                                                     |
 * | `foreign_host`      | 403    | loopback mode: `Host` is not localhost, 127.0.0.1 or [::1]                             |
 * | `foreign_origin`    | 403    | loopback mode: a POST/PUT/PATCH/DELETE from another site's page                        |
 * | `unknown_channel`   | 404    | the dashboard has no channel with that key                                             |
 * | `unknown_message`   | 404    | a DELETE/PUT of a message Ebb never archived in that channel; nothing changed          |
 * | `id_conflict`       | 409    | the `"id"` was already used for another text                                           |
 * | `body_too_large`    | 413    | the body is larger than `maxBodyBytes`                                                 |
 * | `not_json`          | 415    | a JSON route's `Content-Type` is not `application/json`                                |
 * | `rate_limited`      | 429    | too many requests from this client (`Retry-After`)                                     |
 * | `starting`          | 503    | Ebb is not serving turns yet                                                           |
 * | `store_unavailable` | 503    | the message (or deletion, edit) was not kept (`Retry-After`)                           |
 * | `shutting_down`     | 503    | this process is stopping (`Retry-After`)                                               |
 * | `turn_failed`       | 200    | archived, but no reply was made or kept (a field of a 2xx answer)                      |
 */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

export const WEB_ERROR_CODES = [
  'bad_channel_id',
  'bad_json',
  'bad_id',
  'bad_author',
  'bad_text',
  'bad_command',
  'bad_user',
  'nul_character',
  'lone_surrogate',
  'bad_query',
  'unauthorized',
  'forbidden',
  'foreign_host',
  'foreign_origin',
  'unknown_channel',
  'unknown_message',
  'id_conflict',
  'body_too_large',
  'not_json',
  'rate_limited',
  'starting',
  'store_unavailable',
  'shutting_down',
  'turn_failed',
] as const;
export type WebErrorCode = (typeof WEB_ERROR_CODES)[number];

/** The one shape of an error answer: `{"error": "<sentence>", "code": "<WebErrorCode>"}`. */
export function webError(
  c: Context,
  status: ContentfulStatusCode,
  code: WebErrorCode,
  error: string,
): Response {
  return c.json({ error, code }, status);
}
