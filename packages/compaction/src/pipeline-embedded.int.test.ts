/** The same pipeline flows in embedded mode: PGlite in memory and the in-process queue, no Redis. */
import { createDb, migrate } from '@ebb/db';
import { createLogger } from '@ebb/logger';
import { describePipelineFlows } from '../test/pipeline-flows.js';
import { createEmbeddedPipeline } from './embedded-pipeline.js';

describePipelineFlows(
  'pipeline embedded (PGlite + in-process queue)',
  async ({ config, retry, llmTimeoutMs }) => {
    const database = await createDb({ dataDir: 'memory://' });
    await migrate(database);
    const pipeline = createEmbeddedPipeline({
      config: () => config,
      env: { OPENAI_API_KEY: 'test-key' },
      database,
      logger: createLogger({ level: 'silent' }),
      retry,
      llmTimeoutMs,
      sleep: async () => {},
    });
    return {
      ...pipeline,
      async close() {
        await pipeline.close();
        await database.close();
      },
    };
  },
);
