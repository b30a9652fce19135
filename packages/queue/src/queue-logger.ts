/**
 * The slice of a pino logger this package logs through (`@ebb/logger`'s logger fits). Optional
 * everywhere; without one nothing is logged.
 */
export interface QueueLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: QueueLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
