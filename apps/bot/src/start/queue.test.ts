import { describe, expect, it } from 'vitest';
import { redisPrefixOf } from './queue.js';

describe('redisPrefixOf', () => {
  it("gives the embedded database's default prefix a data directory's own, so two npm starts share no queue", () => {
    const mine = redisPrefixOf({ EBB_REDIS_PREFIX: 'ebb', EBB_DATA_DIR: '/home/ana/ebb/.ebb' }, true);
    const theirs = redisPrefixOf({ EBB_REDIS_PREFIX: 'ebb', EBB_DATA_DIR: '/home/bo/ebb/.ebb' }, true);
    expect(mine).toMatch(/^ebb-[0-9a-f]{12}$/);
    expect(theirs).toMatch(/^ebb-[0-9a-f]{12}$/);
    expect(mine).not.toBe(theirs);
    // The same directory, however it is written, is the same prefix (a restart finds its queue).
    expect(redisPrefixOf({ EBB_REDIS_PREFIX: 'ebb', EBB_DATA_DIR: '/home/ana/ebb/./.ebb/' }, true)).toBe(
      mine,
    );
  });

  it('keeps a prefix that was set, and the default on a shared Postgres, where replicas must meet', () => {
    expect(redisPrefixOf({ EBB_REDIS_PREFIX: 'team-a', EBB_DATA_DIR: '/data' }, true)).toBe('team-a');
    expect(redisPrefixOf({ EBB_REDIS_PREFIX: 'ebb', EBB_DATA_DIR: '/data' }, false)).toBe('ebb');
  });
});
