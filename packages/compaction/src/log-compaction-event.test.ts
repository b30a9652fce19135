import { Writable } from 'node:stream';
import { createLogger } from '@ebb/logger';
import { expect, it } from 'vitest';
import { logCompactionEvent } from './run-worker.js';

it('logs a refused key at error, another failed try at warn, and the other steps at info', () => {
  const levels: number[] = [];
  const logger = createLogger({
    destination: new Writable({
      write(chunk, _encoding, done) {
        levels.push((JSON.parse(String(chunk)) as { level: number }).level);
        done();
      },
    }),
  });
  const base = { channel: 'web:a', tier: 'background' } as const;
  logCompactionEvent(logger, { ...base, event: 'compaction.failed', error: 'llm_auth' });
  logCompactionEvent(logger, { ...base, event: 'compaction.failed', error: 'llm_quota_exceeded' });
  logCompactionEvent(logger, { ...base, event: 'compaction.failed', error: 'llm_server' });
  logCompactionEvent(logger, { ...base, event: 'compaction.completed' });
  expect(levels).toEqual([50, 50, 40, 30]);
});
