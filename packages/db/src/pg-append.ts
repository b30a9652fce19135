/**
 * Appending one message inside the caller's transaction: the upsert creates the channel or locks its
 * row and bumps the head in one statement, and the message takes the new head as its seq unless its
 * platform id is stored already (then `DUPLICATE` is thrown to roll the head bump back). The row lock
 * is held until the caller's transaction ends, so messages appended in one transaction get
 * consecutive seqs with nothing between them.
 *
 * A fence (`AppendOptions.fence`) is checked in the same statement: the upsert updates the row only
 * when the stored fence is not greater, and sets it. Refused, it updates nothing and returns no row
 * (the row is locked all the same), nothing is inserted, and `FencedAppendError` is thrown; only
 * then is the stored fence read, for the error. A new channel takes the fence it was created with.
 */
import { type AppendResult, FencedAppendError, type NewMessage } from '@ebb/core';
import { eq, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { platformColumn, rowsOf } from './rows.js';
import { channels, messages } from './schema.js';

/** Thrown inside an append's transaction to roll back the head bump of a duplicate delivery. */
export const DUPLICATE = Symbol('duplicate');

/** `fence`: checked as `checkedFence` checked it; undefined, not checked. */
export async function insertMessage(
  tx: EbbDatabase,
  channelKey: string,
  message: NewMessage,
  fence: number | undefined,
): Promise<AppendResult> {
  const given = sql`${fence ?? null}::bigint`;
  const result = await tx.execute(sql`
    with ch as (
      insert into ${channels} as c (key, platform, head_seq, raw_tokens, fence)
      values (${channelKey}, ${platformColumn(channelKey)}, 1, ${message.contextTokens}, coalesce(${given}, 0))
      on conflict (key) do update
        set head_seq = c.head_seq + 1, raw_tokens = c.raw_tokens + excluded.raw_tokens,
          fence = coalesce(${given}, c.fence), updated_at = now()
        where ${given} is null or c.fence <= ${given}
      returning c.head_seq, c.generation, c.span_tokens + c.raw_tokens as context_tokens
    ), m as (
      insert into ${messages} (channel_key, seq, role, author, content, context_content, tokens,
        context_tokens, omitted_tokens, platform_message_id, tool_calls, tool_call_id, ts, recalled_memories)
      select ${channelKey}, ch.head_seq, ${message.role}, ${message.author},
        ${message.text}, ${message.contextText ?? null}, ${message.tokens}, ${message.contextTokens},
        ${message.omittedTokens ?? null}, ${message.platformMessageId ?? null},
        ${message.toolCalls === undefined ? null : JSON.stringify(message.toolCalls)}::jsonb,
        ${message.toolCallId ?? null}, ${message.ts ?? null},
        ${message.recalledMemories === undefined || message.recalledMemories.length === 0 ? null : JSON.stringify(message.recalledMemories)}::jsonb
      from ch
      on conflict (channel_key, platform_message_id) do nothing
      returning seq
    )
    select ch.head_seq, ch.generation, ch.context_tokens, exists (select 1 from m) as inserted from ch`);
  const row = rowsOf<{
    head_seq: number;
    generation: number;
    context_tokens: number;
    inserted: boolean;
  }>(result)[0];
  if (!row && fence !== undefined) throw await refused(tx, channelKey, fence);
  if (!row?.inserted) throw DUPLICATE;
  return {
    seq: Number(row.head_seq),
    headSeq: Number(row.head_seq),
    inserted: true,
    generation: Number(row.generation),
    contextTokens: Number(row.context_tokens),
  };
}

/** The refusal of `fence`, with the fence the channel holds (read under the lock the upsert took). */
async function refused(tx: EbbDatabase, channelKey: string, fence: number): Promise<FencedAppendError> {
  const [row] = await tx.select({ fence: channels.fence }).from(channels).where(eq(channels.key, channelKey));
  return new FencedAppendError(channelKey, fence, row?.fence);
}
