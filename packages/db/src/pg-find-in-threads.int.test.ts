/**
 * `findInThreads` on Postgres where the store contract cannot look: under a collation that does not
 * sort keys byte by byte (the postgres image's default is en_US.utf8), and what its plan reads. The
 * database here sorts in code-point order, so the test gives its schema's key columns an ICU en-US
 * collation, as such a database would have them.
 */
import { freshSchemaDb } from '@ebb/db/test-support';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgChannelStore } from './pg-channel-store.js';
import { findInThreadsQuery } from './pg-redaction.js';
import { rowsOf } from './rows.js';

const CHANNEL = 'slack:T1:C1';
const THREAD = `${CHANNEL}:1700000000.000100`;
/** Threads of other channels, and of this one, so the planner has a table worth an index. */
const OTHER_THREADS = 3_000;
const OWN_THREADS = 50;

let pg: Awaited<ReturnType<typeof freshSchemaDb>>;
let store: PgChannelStore;

beforeAll(async () => {
  pg = await freshSchemaDb();
  await pg.db.execute(sql`alter table channels alter column key type text collate "en-US-x-icu"`);
  await pg.db.execute(sql`alter table messages alter column channel_key type text collate "en-US-x-icu"`);
  store = new PgChannelStore({ db: pg.db });
  const message = (platformMessageId: string) => ({
    role: 'user' as const,
    author: 'alice',
    text: 'hi',
    tokens: 1,
    contextTokens: 1,
    platformMessageId,
  });
  await store.append(CHANNEL, message('1700000000.000100'));
  await store.append(THREAD, message('1700000000.000300'));
  await store.append('slack:T1:C12', message('1700000000.000400'));
  await pg.db.execute(sql`
    with keys as (
      select format('slack:T1:C%s:%s.000100', 100 + i % 40, 1700000000 + i) as key from generate_series(1, ${OTHER_THREADS}) i
      union all
      select format('slack:T1:C1:%s.000900', 1700000000 + i) from generate_series(1, ${OWN_THREADS}) i
    ), made as (
      insert into channels (key, platform, head_seq) select key, 'slack', 3 from keys returning key
    )
    insert into messages (channel_key, seq, role, author, content, tokens, context_tokens, platform_message_id)
    select key, s, 'user', 'bo', 'filler', 1, 1, format('%s.%s', md5(key), s) from made, generate_series(1, 3) s`);
  await pg.db.execute(sql`analyze channels`);
  await pg.db.execute(sql`analyze messages`);
});
afterAll(async () => {
  await pg?.close();
});

describe('postgres: findInThreads under a collation that is not byte order', () => {
  it("finds the thread the primary key's order puts outside the channel's range", async () => {
    // In the primary key's (en-US) order the thread is not between `<channel>:` and `<channel>;`:
    // a range in it would miss the reply.
    const naive = rowsOf<{ n: number }>(
      await pg.db.execute(
        sql`select count(*)::int as n from channels where key >= ${`${CHANNEL}:`} and key < ${`${CHANNEL};`} and key = ${THREAD}`,
      ),
    );
    expect(naive[0]?.n).toBe(0);

    expect(await store.findInThreads(CHANNEL, ['1700000000.000300', '1700000000.000400', 'nowhere'])).toEqual(
      [{ channelKey: THREAD, platformMessageId: '1700000000.000300' }],
    );
    expect(await store.findInThreads('slack:T1:C12', ['1700000000.000300'])).toEqual([]);
  });

  it("reads the channel's threads by the byte-order index and each thread's ids by the unique index, never the messages table", async () => {
    const query = findInThreadsQuery(CHANNEL, ['1700000000.000300']);
    type PlanNode = {
      'Node Type': string;
      'Relation Name'?: string;
      'Index Name'?: string;
      Plans?: PlanNode[];
    };
    const [explained] = rowsOf<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
      await pg.db.execute(sql`explain (format json) ${query}`),
    );
    const nodes: PlanNode[] = [];
    const walk = (node: PlanNode | undefined) => {
      if (!node) return;
      nodes.push(node);
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(explained?.['QUERY PLAN'][0]?.Plan);
    expect(nodes).not.toEqual([]);

    const indexes = nodes.flatMap((n) => (n['Index Name'] ? [n['Index Name']] : []));
    expect(indexes).toContain('channels_key_bytes_idx');
    expect(indexes).toContain('messages_platform_message_id_idx');
    expect(nodes.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name'])).toEqual([]);
  });
});
