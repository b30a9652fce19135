/**
 * Runs Prometheus's own checker, `promtool` (Debian's `prometheus` package), for the tests of the
 * files in `deploy/`. Where it is not installed the tests fail, with the command that installs it:
 * they never pass by skipping.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

export const INSTALL_PROMTOOL = 'apt-get install -y --no-install-recommends prometheus';

/**
 * Runs promtool with `args`, its output written to the file `printed`; its exit code and what it
 * printed, stdout and stderr in the order it wrote them (it names each file tested on stdout and its
 * failures on stderr).
 */
export function runPromtool(
  printed: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): { code: number; output: string } {
  const fd = openSync(printed, 'w');
  const run = spawnSync('promtool', args, { stdio: ['ignore', fd, fd], timeout: 60_000, env });
  closeSync(fd);
  if ((run.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error(
      `promtool is not installed (no promtool on PATH). These tests check deploy/'s alerts and Grafana ` +
        `queries with Prometheus's own checker; install it with \`${INSTALL_PROMTOOL}\` (Debian and ` +
        'Ubuntu, as root; .ci/run does), or put the promtool of a Prometheus release on PATH.',
    );
  }
  if (run.error) throw new Error(`promtool could not run: ${run.error.message}`, { cause: run.error });
  return { code: run.status ?? -1, output: readFileSync(printed, 'utf8') };
}
