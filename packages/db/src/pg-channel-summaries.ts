/**
 * A channel's counters as `ChannelDirectory.listChannels` and `channelSummary` give them: one query for
 * every channel (operators' lists) or for one (the dashboard's detail routes), the same columns and
 * the same mapping, so a channel reads alike in both.
 */
import type { ChannelSummary } from '@ebb/core';
import { eq, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { channels } from './schema.js';

/** Every channel, in byte order of its key (as the in-memory store sorts, whatever the collation). */
export async function listChannelSummaries(db: EbbDatabase): Promise<ChannelSummary[]> {
  const rows = await selectSummaries(db).orderBy(sql`${channels.key} collate "C"`);
  return rows.map(summaryOfRow);
}

/** One channel, or undefined when there is no such channel. */
export async function readChannelSummary(
  db: EbbDatabase,
  channelKey: string,
): Promise<ChannelSummary | undefined> {
  const [row] = await selectSummaries(db).where(eq(channels.key, channelKey));
  return row === undefined ? undefined : summaryOfRow(row);
}

function selectSummaries(db: EbbDatabase) {
  return db
    .select({
      key: channels.key,
      headSeq: channels.headSeq,
      generation: channels.generation,
      tokens: sql<number>`${channels.spanTokens} + ${channels.rawTokens}`.mapWith(Number),
      stubbed: channels.stubbedResults,
      tokensSaved: channels.stubbedTokensSaved,
      updatedAt: channels.updatedAt,
      factor: channels.calibrationFactor,
      samples: channels.calibrationSamples,
    })
    .from(channels)
    .$dynamic();
}

type SummaryRow = Awaited<ReturnType<typeof selectSummaries>>[number];

function summaryOfRow({
  stubbed,
  tokensSaved,
  updatedAt,
  factor,
  samples,
  ...row
}: SummaryRow): ChannelSummary {
  return {
    ...row,
    microcompaction: { stubbed, tokensSaved },
    lastActiveAt: updatedAt.getTime(),
    calibration: { factor, samples },
  };
}
