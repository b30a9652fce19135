/**
 * A compaction worker in its own process, for the test that kills one with SIGKILL mid-pass.
 * Arguments: the Postgres schema, the Redis prefix and the fake OpenAI server's URL. Prints
 * `ready` once it takes jobs. Short BullMQ lock and stalled-check times, so the test is quick.
 */

import { runCompactionWorker } from '@ebb/compaction';
import { FAST_RETRY, pipelineConfig } from '@ebb/compaction/test-support';
import { createDb } from '@ebb/db';
import { createLogger } from '@ebb/logger';
import { testDatabaseUrl } from '@ebb/testing/postgres';
import { redisUrl } from '@ebb/testing/redis';

const [schema, prefix, fakeUrl] = process.argv.slice(2);
if (!schema || !prefix || !fakeUrl) throw new Error('usage: worker-process SCHEMA PREFIX FAKE_URL');

const database = await createDb({ databaseUrl: testDatabaseUrl(), schema });
const config = pipelineConfig(fakeUrl);
await runCompactionWorker({
  config: () => config,
  env: { OPENAI_API_KEY: 'test-key' },
  database,
  redisUrl: redisUrl(),
  redisPrefix: prefix,
  logger: createLogger({ level: 'silent' }),
  lockDuration: 1_000,
  stalledInterval: 500,
  retry: FAST_RETRY,
  llmTimeoutMs: 30_000,
});
process.stdout.write('ready\n');
