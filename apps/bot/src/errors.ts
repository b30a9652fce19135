/**
 * The bot's own error codes (the packages it composes raise theirs).
 *
 * | code                   | from                                                        | retryable |
 * | ---------------------- | ----------------------------------------------------------- | --------- |
 * | `not_started`          | a turn or command before the bot started                    | no        |
 * | `context_unavailable`  | `ContextReloadError`: stored, but the context not reloaded  | yes       |
 * | `change_not_kept`      | a deletion or edit neither applied nor spooled (store away) | yes       |
 * | `no_adapter`           | a reply to a platform whose adapter is not running          | no        |
 * | `no_model`             | a channel with no LLM (no `OPENAI_API_KEY`, no `base_url`)  | no        |
 * | `start_refused`        | `StartRefusedError`: an unsafe setting, with its fix        | no        |
 * | `transcript_malformed` | `TranscriptError`: a bad line in a transcript file          | no        |
 */
import { COMMON_ERROR_CODES, EbbError } from '@ebb/core';

export const BOT_ERROR_CODES = [
  ...COMMON_ERROR_CODES,
  'context_unavailable',
  'change_not_kept',
  'no_adapter',
  'no_model',
  'start_refused',
  'transcript_malformed',
] as const;
export type BotErrorCode = (typeof BOT_ERROR_CODES)[number];

/** An error raised by the bot itself, with one of `BOT_ERROR_CODES`. */
export class BotError extends EbbError<BotErrorCode> {}
