/**
 * `ebb start` in a process of its own, for the tests that stop it with a signal: the composition root
 * and the signal handling of `ebb start`, on a test's Postgres schema, Redis prefix and fake OpenAI.
 * Arguments: SCHEMA PREFIX FAKE_URL. Prints `ready <web url>` once it serves; logs go to stderr.
 * Environment (spawn-ebb.ts always sets them, '' for unset): EBB_PROCESS_WEB (the `[web]` table's
 * lines; unset: no rate limit), EBB_ADMIN_TOKEN (unset: none), EBB_PROCESS_DATABASE_URL (unset: the
 * test database's own URL), REDIS_URL (unset: Ebb's default), EBB_DATA_DIR (unset: Ebb's default)
 * and EBB_PROCESS_CONFIG (a whole config.toml instead of the one above); the OTEL_* variables reach
 * Ebb as they are.
 */
import { loadEnv, parseConfig } from '@ebb/config';
import { createDb } from '@ebb/db';
import { testDatabaseUrl } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { stopGracefully, untilSignalled } from '../src/commands/run.js';
import { startEbb } from '../src/start-ebb.js';
import { FULL_SPEED_WEB } from './small-window.js';

const [schema, prefix, fakeUrl] = process.argv.slice(2);
if (!schema || !prefix || !fakeUrl) throw new Error('usage: ebb-process SCHEMA PREFIX FAKE_URL');

// '' is unset, like an absent variable.
const web = process.env.EBB_PROCESS_WEB ? process.env.EBB_PROCESS_WEB.split('\n') : FULL_SPEED_WEB;
const config = parseConfig(
  process.env.EBB_PROCESS_CONFIG ||
    ['[llm]', `base_url = "${fakeUrl}"`, ...web, '[web.bot]', 'respond_to = "all"'].join('\n'),
  'ebb-process.toml',
);
const tracing = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('OTEL_')));
const logger = createLogger({ level: 'info', destination: process.stderr });
const database = await createDb({
  databaseUrl: process.env.EBB_PROCESS_DATABASE_URL || testDatabaseUrl(),
  schema,
});
const ebb = await startEbb({
  config: () => config,
  env: loadEnv({
    OPENAI_API_KEY: 'test-key',
    EBB_REDIS_PREFIX: prefix,
    EBB_ADMIN_TOKEN: process.env.EBB_ADMIN_TOKEN || undefined,
    REDIS_URL: process.env.REDIS_URL || undefined,
    EBB_DATA_DIR: process.env.EBB_DATA_DIR || undefined,
    ...tracing,
  }),
  logger,
  withWorker: false,
  webPort: 0,
  database,
  processMetrics: false,
});
process.stdout.write(`ready ${ebb.web.url}\n`);
await untilSignalled(logger, () => config.shutdown.grace_seconds);
await stopGracefully(ebb, logger);
await database.close();
