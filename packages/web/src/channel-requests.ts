/**
 * What the web channel's routes take (`web-adapter.ts` serves them), as zod schemas checked at the
 * edge: a route handler gets a typed body or the one refusal that answers it, never raw JSON.
 *
 * | route                          | schema          | fields                                              |
 * | ------------------------------ | --------------- | --------------------------------------------------- |
 * | `POST …/messages`              | `PostedMessage` | `author`, `text`, `id`? (idempotency key)           |
 * | `PUT …/messages/:messageId`    | `MessageEdit`   | `text`                                              |
 * | `POST …/commands`              | `CommandCall`   | `name`, `args`? (default `""`), `user`? (`"web"`)   |
 * | every `…/channels/:id/…`       | `CHANNEL_ID`    | the `:id` param                                     |
 * | `DELETE`/`PUT …/:messageId`    | `MessageIdParam`| the `:messageId` param                              |
 *
 * Each failed rule names its code (`errors.ts`): a refinement carries it in `params.code`, any other
 * failure of a field (missing, wrong type) takes the field's own (`FIELD_CODES`). A body with several
 * faults is answered by the first in `PRECEDENCE`: what no store can keep as sent (NUL, an unpaired
 * surrogate) before a field's shape, so the answer says what the client must change in its text.
 */
import type { CommandName } from '@ebb/core';
import type { Context } from 'hono';
import { z } from 'zod';
import { type WebErrorCode, webError } from './errors.js';

export const CHANNEL_ID = /^[A-Za-z0-9_.-]{1,100}$/;
export const CHANNEL_ID_RULE = 'channel id: letters, digits, _ . - (at most 100)';
const MAX_TEXT = 40_000;
const MAX_AUTHOR = 100;
const MAX_ID = 256;
/** Control characters, line breaks and bidi overrides: a name with them could forge a transcript line. */
const UNSAFE_IN_NAME = /[\p{Cc}\p{Zl}\p{Zp}\u202A-\u202E\u2066-\u2069]/u;
/**
 * An unpaired UTF-16 surrogate (a JSON `"\ud800"` parses to one; `u` mode pairs the rest). It is
 * not Unicode text: UTF-8 keeps it as U+FFFD, so the archived text would differ from what was sent,
 * and the idempotent retry of the same body would be answered `409 id_conflict`.
 */
const LONE_SURROGATE = /\p{Cs}/u;
/** Path segments URL parsing removes (WHATWG, and so `@hono/node-server`, `%2e` forms included). */
const DOT_SEGMENTS: readonly string[] = ['.', '..'];
const COMMANDS = ['context', 'compact'] as const satisfies readonly CommandName[];

/** The code of a field's failure that names none (missing, wrong type). */
const FIELD_CODES: Readonly<Record<string, WebErrorCode>> = {
  author: 'bad_author',
  text: 'bad_text',
  id: 'bad_id',
  name: 'bad_command',
  user: 'bad_user',
};
const PRECEDENCE: readonly WebErrorCode[] = [
  'bad_json',
  'bad_id',
  'nul_character',
  'lone_surrogate',
  'bad_author',
  'bad_text',
  'bad_command',
  'bad_user',
];

const refusal = (code: WebErrorCode, error: string) => ({ error, params: { code } });

/** The rules every stored string keeps: Postgres cannot hold NUL; no store keeps a lone surrogate. */
const storable = (field: string) =>
  z
    .string()
    .refine(
      (s) => !s.includes('\u0000'),
      refusal('nul_character', `"${field}" must not contain NUL (\\u0000) characters`),
    )
    .refine(
      (s) => !LONE_SURROGATE.test(s),
      refusal(
        'lone_surrogate',
        `"${field}" contains an unpaired UTF-16 surrogate (a \\ud800-\\udfff escape with no partner): it is not Unicode text, and would be kept as U+FFFD rather than as sent`,
      ),
    );

/** A name shown in a transcript line: not blank, short, on one line, without control or bidi characters. */
const isName = (s: string, max: number) => s.trim() !== '' && s.length <= max && !UNSAFE_IN_NAME.test(s);

const TEXT_RULE = `"text" must be a non-empty string of at most ${MAX_TEXT} characters`;
const text = z
  .string({ error: TEXT_RULE })
  .pipe(storable('text'))
  .refine((s) => s.trim() !== '' && s.length <= MAX_TEXT, { error: TEXT_RULE });

const AUTHOR_RULE = `"author" must be a non-empty string of at most ${MAX_AUTHOR} characters, on one line, without control or bidi characters`;
const ID_RULE = `"id" must be a non-empty string of at most ${MAX_ID} characters`;

export const PostedMessage = z.object({
  author: z
    .string({ error: AUTHOR_RULE })
    .trim()
    .pipe(storable('author'))
    .refine((s) => isName(s, MAX_AUTHOR), { error: AUTHOR_RULE }),
  text,
  id: z
    .string({ error: ID_RULE })
    .min(1, { error: ID_RULE })
    .max(MAX_ID, { error: ID_RULE })
    .refine((s) => !DOT_SEGMENTS.includes(s), {
      error: (issue) =>
        `"id" must not be "${String(issue.input)}": URL parsing drops a "." or ".." path segment, so no DELETE or PUT could reach the message`,
    })
    .pipe(storable('id'))
    .optional(),
});

export const MessageEdit = z.object({ text });

export const CommandCall = z.object({
  name: z.enum(COMMANDS, { error: `"name" must be one of ${COMMANDS.join(', ')}` }),
  args: z.string().catch(''),
  user: z
    .string({ error: `"user" must be a non-empty string of at most ${MAX_AUTHOR} characters` })
    .refine((s) => isName(s, MAX_AUTHOR), {
      error: `"user" must be a non-empty string of at most ${MAX_AUTHOR} characters`,
    })
    .default('web'),
});

/**
 * A DELETE's or PUT's `:messageId`, which a POST's `"id"` could have been. (A `.` or `..` never gets
 * here: URL parsing has removed it, and the route does not match.) Hono leaves a percent-encoded
 * surrogate (`%ED%A0%80`, not UTF-8) undecoded, so none arrives today; checked so that a router that
 * decodes one cannot hand it to the bot.
 */
export const MessageIdParam = z
  .string()
  .refine((id) => id !== '' && id.length <= MAX_ID && !id.includes('\u0000'), {
    error: `the message id must be a non-empty string of at most ${MAX_ID} characters, without NUL`,
  })
  .refine((id) => !LONE_SURROGATE.test(id), {
    error: 'the message id must not contain an unpaired UTF-16 surrogate (not Unicode text)',
  });

/** The `:messageId` param, or its `400 bad_id`. */
export function messageIdOf(c: Context): string | Response {
  const id = MessageIdParam.safeParse(c.req.param('messageId') ?? '');
  return id.success ? id.data : webError(c, 400, 'bad_id', id.error.issues[0]?.message ?? 'bad id');
}

/**
 * The body, parsed by `schema`, or the refusal that answers it: `415 not_json` (not sent as
 * `application/json`), `400 bad_json` (not a JSON object), else the first failed rule by `PRECEDENCE`.
 */
export async function bodyOf<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S> | Response> {
  const type = c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json')
    return webError(
      c,
      415,
      'not_json',
      `the body must be JSON sent with Content-Type: application/json (this one came ${type ? `as ${type}` : 'without one'})`,
    );
  const json: unknown = await c.req.json().catch(() => undefined);
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return webError(c, 400, 'bad_json', 'the body must be a JSON object');
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  const refusals = parsed.error.issues.map((issue) => ({
    code: codeOf(issue),
    message: issue.message,
  }));
  const first = refusals.sort((a, b) => PRECEDENCE.indexOf(a.code) - PRECEDENCE.indexOf(b.code))[0];
  return webError(c, 400, first?.code ?? 'bad_json', first?.message ?? 'the body must be a JSON object');
}

function codeOf(issue: z.core.$ZodIssue): WebErrorCode {
  const named = 'params' in issue ? (issue.params as { code?: WebErrorCode } | undefined)?.code : undefined;
  return named ?? FIELD_CODES[String(issue.path[0] ?? '')] ?? 'bad_json';
}
