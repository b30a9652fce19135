import { Writable } from 'node:stream';
import type { Logger } from '@ebb/core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createLogger } from './create-logger.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('writes one JSON line per event and redacts secrets and URL passwords', () => {
    const { lines, destination } = capture();
    const log = createLogger({ destination });
    log.info(
      {
        event: 'compaction.completed',
        channel: 'slack:T1:C1',
        apiKey: 'sk-live-123',
        client: { token: 'xoxb-secret' },
        databaseUrl: 'postgres://ebb:hunter2@db:5432/ebb',
      },
      'compaction completed',
    );
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? '');
    expect(line).toMatchObject({
      event: 'compaction.completed',
      channel: 'slack:T1:C1',
      apiKey: '[redacted]',
    });
    expect(line.client.token).toBe('[redacted]');
    expect(line.databaseUrl).toBe('postgres://ebb:[redacted]@db:5432/ebb');
    expect(lines.join('')).not.toMatch(/sk-live-123|xoxb-secret|hunter2/);
  });

  it('satisfies the Logger port, children included', () => {
    const { lines, destination } = capture();
    const log: Logger = createLogger({ destination });
    expectTypeOf(createLogger()).toExtend<Logger>();
    log
      .child({ channel: 'slack:T1:C1' })
      .child({ jobId: '7' })
      .warn({ event: 'compaction.failed' }, 'failed');
    log.info('plain message');
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([
      { level: 40, channel: 'slack:T1:C1', jobId: '7', event: 'compaction.failed', msg: 'failed' },
      { level: 30, msg: 'plain message' },
    ]);
  });
});
