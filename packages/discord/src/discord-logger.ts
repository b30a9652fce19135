/**
 * The slice of a pino logger the adapter logs through (`@ebb/logger`'s logger fits). Without one
 * nothing is logged. The bot token is never passed to it.
 */
export interface DiscordLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: DiscordLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
