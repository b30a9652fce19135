/**
 * The one logging port: the part of pino's API Ebb uses, so packages log without depending on pino
 * (`@ebb/logger`'s pino logger is one; `SILENT_LOGGER` is the default and the tests' choice).
 *
 * The log contract every line keeps (docs/operations.md, "Logs"):
 * - Every line names its step in `event`, as `area.verb` in lowercase with dots (`slack.started`,
 *   `compaction.completed`, `discord.commands_registered`): the first argument is always an object
 *   with an `event` (`apps/bot/test/repo/log-events.test.ts` scans every call, and the docs/operations.md lists them).
 * - `channel` is the Ebb channel key (`slack:T1:C1`), never `channelKey`; a platform's own ids go
 *   under their own names (`channelId`).
 * - What a line is about is bound once with `child`: `log.child({ channel })` per turn,
 *   `log.child({ jobId, channel })` per compaction pass.
 */

/** Fields bound to every line of a child logger. */
export type LogBindings = Readonly<Record<string, unknown>>;

/** One level: structured fields first (`err` for an error), then the message. */
export interface LogFn {
  (fields: object, message?: string): void;
  (message: string): void;
}

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  /** A logger that adds `bindings` to every line (pino's `child`). */
  child(bindings: LogBindings): Logger;
}

const drop: LogFn = () => {};

/** Logs nothing: the default where no logger is given. */
export const SILENT_LOGGER: Logger = {
  debug: drop,
  info: drop,
  warn: drop,
  error: drop,
  fatal: drop,
  child: () => SILENT_LOGGER,
};
