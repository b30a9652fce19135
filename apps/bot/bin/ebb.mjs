#!/usr/bin/env node
// The `ebb` command. It runs the compiled CLI in apps/bot/dist (`npm run build`; `npm install` builds).
// Under the `ebb-source` export condition (`node --conditions=ebb-source`, which the tests set through
// NODE_OPTIONS; a name of our own, as third-party packages such as eventsource-parser export a `source`
// condition too) `@ebb/bot/cli` and every package resolve to their TypeScript sources instead, and
// tsx (a dev dependency) compiles them on load: tests never run a stale build.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = import.meta.resolve('@ebb/bot/cli');
if (cli.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
} else if (!existsSync(fileURLToPath(cli))) {
  console.error('ebb: the build is missing (apps/bot/dist): run `npm run build` in the repository.');
  process.exit(1);
}
// Traced processes get Postgres and Redis spans from OpenTelemetry's instrumentations, which must
// hook those modules before the CLI imports them (`instrument-libraries.ts`). An endpoint is what
// turns tracing on at all, so without one nothing of it is even loaded.
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
  const { instrumentLibraries } = await import('@ebb/observability/instrument');
  await instrumentLibraries(process.argv[2], process.env);
}
// A reader that stops early (`ebb transcript | head`, `ebb status | less` quit) closes the pipe: stop
// quietly, as Unix tools do, instead of a stack trace from the next write.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(0);
  });
const { main } = await import(cli);
process.exitCode = await main(process.argv.slice(2));
