/**
 * Hot reload for the long-running commands: config.toml is watched and SIGHUP reloads it; each
 * outcome is one log line (`config.reloaded` with what changed, `config.rejected` with the report).
 */
import { ConfigWatcher, type EbbConfig } from '@ebb/config';
import type { Logger } from '@ebb/logger';

export function watchConfig(
  config: EbbConfig,
  logger: Logger,
): { current: () => EbbConfig; stop: () => void } {
  if (config.file === null) return { current: () => config, stop: () => {} };
  const watcher = new ConfigWatcher({
    file: config.file,
    initial: config,
    onReload: (outcome) => {
      if (outcome.kind === 'reloaded') {
        logger.info(
          { event: 'config.reloaded', file: config.file, changed: outcome.changed },
          'config.reloaded',
        );
      } else if (outcome.kind === 'rejected') {
        logger.error(
          { event: 'config.rejected', file: config.file, error: outcome.error.message },
          'config.rejected: the running config stays',
        );
      }
    },
  });
  watcher.start();
  const onHangup = () => void watcher.reload();
  process.on('SIGHUP', onHangup);
  return {
    current: () => watcher.current(),
    stop: () => {
      process.off('SIGHUP', onHangup);
      watcher.stop();
    },
  };
}
