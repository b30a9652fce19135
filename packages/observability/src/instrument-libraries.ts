/**
 * Postgres and Redis in the traces, through OpenTelemetry's maintained instrumentations
 * (`@opentelemetry/instrumentation-pg` and `-ioredis`). They patch `pg` and `ioredis` as those load, so this must run before the CLI imports anything: `bin/ebb.mjs` calls
 * it first, for the commands that trace (`ebb start`, `ebb dev`, `ebb worker`), and only when the
 * variables ask for tracing (`planTracing`); otherwise nothing here is loaded and no module is
 * intercepted. The spans go to whatever provider `startTracing` registers later (the instrumentations
 * hold the API's proxy tracer).
 *
 * The ESM graph is intercepted by `import-in-the-middle`'s loader hook, told to wrap only the modules
 * an instrumentation asked for (`createAddHookMessageChannel`), so every other module loads as it
 * would without tracing; CommonJS requires inside those packages go through `require-in-the-middle`.
 *
 * What the spans may hold: no message text and no channel key anywhere.
 * - Postgres: the SQL as written, with its `$n` placeholders, never the values bound to them
 *   (`enhancedDatabaseReporting` stays off); no connect spans (a pool's checkout is in the query's time).
 * - Redis: the command's name only (`db.statement` = `SET`, `EVALSHA`): a key names a channel, and a
 *   value may be a cached context or a spooled message.
 * - Only calls made inside a trace get a span (`requireParentSpan`):
 *   the queue's blocking polls, the lease renewals and the reconciler's reads are not traced on their own.
 */
import { register } from 'node:module';
import { planTracing, type TracingEnv } from './tracing-plan.js';

/** The commands whose processes start tracing (`startTracing`), so the only ones instrumented. */
export const TRACED_COMMANDS: readonly string[] = ['start', 'dev', 'worker'];

/**
 * Instruments `pg` and `ioredis` when `command` traces and `env` asks for tracing.
 * Returns whether it did. Must run before any of them is imported.
 */
export async function instrumentLibraries(command: string | undefined, env: TracingEnv): Promise<boolean> {
  if (command === undefined || !TRACED_COMMANDS.includes(command)) return false;
  if (planTracing(env).kind === 'off') return false;
  const [{ createAddHookMessageChannel }, { registerInstrumentations }, pg, ioredis] = await Promise.all([
    import('import-in-the-middle'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
  ]);
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  registerInstrumentations({
    instrumentations: [
      new pg.PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      new ioredis.IORedisInstrumentation({
        requireParentSpan: true,
        dbStatementSerializer: (command) => command.toUpperCase(),
      }),
    ],
  });
  // The loader runs on its own thread: the modules to wrap must reach it before the CLI is imported.
  await waitForAllMessagesAcknowledged();
  return true;
}
