/**
 * Microcompaction on Postgres: stubs in place of raw tool results' context copies, under the channel
 * row lock. The archived text (`content`) is never touched; `context_content` holds the stub,
 * `context_tokens` its count, and `stubbed` tells the stub from a clipped copy, so a pass reads the
 * stub (`readArchive`'s `stub`) and `read_history` the whole result.
 */
import type { StubOutcome, StubRequest } from '@ebb/core';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { lockChannel } from './pg-channel-rows.js';
import { channels, messages } from './schema.js';

export function stubToolResults(
  db: EbbDatabase,
  channelKey: string,
  request: StubRequest,
): Promise<StubOutcome> {
  return db.transaction(async (tx): Promise<StubOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    if (!channel) return { kind: 'stale', reason: 'no such channel' };
    if (channel.generation !== request.expectedGeneration) {
      return { kind: 'stale', reason: `the channel is at generation ${channel.generation}` };
    }
    const seqs = request.stubs.map((s) => s.seq);
    const rows = await tx
      .select({
        seq: messages.seq,
        role: messages.role,
        stubbed: messages.stubbed,
        contextTokens: messages.contextTokens,
      })
      .from(messages)
      .where(and(eq(messages.channelKey, channelKey), inArray(messages.seq, seqs)));
    const current = new Map(rows.map((r) => [r.seq, r]));
    let delta = 0;
    for (const stub of request.stubs) {
      const row = current.get(stub.seq);
      if (row?.role !== 'tool' || row.stubbed || stub.seq <= channel.prefixEnd || stub.stubbed !== true) {
        return { kind: 'stale', reason: `seq ${stub.seq} is not a raw tool result to stub` };
      }
      delta += stub.tokens - row.contextTokens;
    }
    for (const stub of request.stubs) {
      await tx
        .update(messages)
        .set({ contextContent: stub.text, contextTokens: stub.tokens, omittedTokens: null, stubbed: true })
        .where(and(eq(messages.channelKey, channelKey), eq(messages.seq, stub.seq)));
    }
    const generation = channel.generation + 1;
    const rawTokens = channel.rawTokens + delta;
    await tx
      .update(channels)
      .set({
        generation,
        rawTokens,
        stubbedResults: sql`${channels.stubbedResults} + ${request.stubs.length}`,
        stubbedTokensSaved: sql`${channels.stubbedTokensSaved} + ${-delta}`,
        updatedAt: sql`now()`,
      })
      .where(eq(channels.key, channelKey));
    return {
      kind: 'stubbed',
      generation,
      tokensBefore: channel.spanTokens + channel.rawTokens,
      tokensAfter: channel.spanTokens + rawTokens,
      stubbed: request.stubs.length,
    };
  });
}
