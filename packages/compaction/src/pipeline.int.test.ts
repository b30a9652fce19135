/** The pipeline flows on Postgres 15 and BullMQ (a worker in this process), with a fresh schema and Redis prefix. */

import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { BullmqCompactionQueue, createRedis, RedisContextNotifier, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { describePipelineFlows } from '../test/pipeline-flows.js';
import { runCompactionWorker } from './run-worker.js';

describePipelineFlows('pipeline on Postgres + BullMQ', async ({ config, retry, llmTimeoutMs }) => {
  const fresh = await freshSchemaDb();
  const prefix = randomPrefix();
  const url = redisUrl();
  const logger = createLogger({ level: 'silent' });
  const worker = await runCompactionWorker({
    config: () => config,
    env: { OPENAI_API_KEY: 'test-key' },
    database: fresh.database,
    redisUrl: url,
    redisPrefix: prefix,
    logger,
    retry,
    llmTimeoutMs,
  });
  const producer = createRedis(url, { role: 'producer' });
  await waitForReady(producer);
  // A short job backoff: a background pass retries its 5 attempts in well under a second.
  const jobOptions = { backoff: { type: 'exponential', delay: 10, jitter: 0 } } as const;
  const queue = new BullmqCompactionQueue({ connection: producer, prefix, jobOptions });
  const notifier = RedisContextNotifier.connect(url, { prefix });
  return {
    channels: new PgChannelStore({ db: fresh.db }),
    memories: new PgMemoryStore({ db: fresh.db }),
    runs: new PgRunStore({ db: fresh.db }),
    queue,
    notifier,
    async close() {
      await worker.close(5_000);
      await queue.close();
      await notifier.close();
      await cleanupPrefix(producer, prefix);
      await producer.quit();
      await fresh.close();
    },
  };
});
