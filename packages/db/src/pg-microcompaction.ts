/**
 * Microcompaction on Postgres: stubs in place of raw tool results' context copies, under the channel
 * row lock. The archived text (`content`) is never touched; `context_content` holds the stub,
 * `context_tokens` its count, and `stubbed` tells the stub from a clipped copy, so a pass reads the
 * stub (`readArchive`'s `stub`) and `read_history` the whole result.
 */
import { planStubs, type StubOutcome, type StubRequest } from '@ebb/core';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { copyColumns, lockChannel } from './pg-channel-rows.js';
import { channels, messages } from './schema.js';

/** `ContextWriter.stubToolResults`: planned by `planStubs` on the locked channel row and the rows named. */
export function stubToolResults(
  db: EbbDatabase,
  channelKey: string,
  request: StubRequest,
): Promise<StubOutcome> {
  return db.transaction(async (tx): Promise<StubOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    const seqs = request.stubs.map((s) => s.seq);
    const found =
      channel === undefined || seqs.length === 0
        ? []
        : await tx
            .select({
              seq: messages.seq,
              role: messages.role,
              stubbed: messages.stubbed,
              tokens: messages.contextTokens,
            })
            .from(messages)
            .where(and(eq(messages.channelKey, channelKey), inArray(messages.seq, seqs)));
    const plan = planStubs(channel, found, request);
    if (plan.kind === 'stale') return plan;
    for (const { seq, copy } of plan.copies) {
      await tx
        .update(messages)
        .set(copyColumns(copy))
        .where(and(eq(messages.channelKey, channelKey), eq(messages.seq, seq)));
    }
    if (plan.copies.length > 0) {
      await tx
        .update(channels)
        .set({
          generation: plan.generation,
          rawTokens: plan.rawTokens,
          stubbedResults: sql`${channels.stubbedResults} + ${plan.copies.length}`,
          stubbedTokensSaved: sql`${channels.stubbedTokensSaved} + ${plan.tokensSaved}`,
          updatedAt: sql`now()`,
        })
        .where(eq(channels.key, channelKey));
    }
    const { generation, tokensBefore, tokensAfter } = plan;
    return { kind: 'stubbed', generation, tokensBefore, tokensAfter, stubbed: plan.copies.length };
  });
}
