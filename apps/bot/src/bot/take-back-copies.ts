/**
 * Where a take-back's text was copied in the archive, read before the tombstones lose it: the turns
 * right after the messages (`readTurnsAfter`: a deletion's, and `ebb forget --speaker`'s), the
 * history tools' results that quoted them with the rest of their turns (`historyCopies`), the bot's
 * later messages that quote them (`quotingReplies`) and the replies whose prompt recalled a memory
 * the take-back dropped (`recallingReplies`). Reads only: `MessageChanges` (`message-changes.ts`)
 * tombstones what they find; what counts as a copy is decided by the pure functions of `@ebb/core`
 * (`historyResultsQuoting`, `repliesQuoting`, `turnRestAfter`).
 */
import {
  type ArchiveReader,
  type Forgetting,
  HISTORY_TOOL_NAMES,
  historyResultsQuoting,
  REDACTED_MESSAGE,
  rangesAfter,
  repliesQuoting,
  type SeqRange,
  type StoredMessage,
  seqRanges,
  turnRestAfter,
} from '@ebb/core';

/** Messages read past a deleted one to find the turn that answered it: room for a turn's tool steps. */
const REPLY_LOOKAHEAD = 200;
/**
 * Messages read past a taken-back one for the bot's messages that quote it: a reply that repeats it
 * further on (a question about it days later) is left to `ebb forget --match`.
 */
const QUOTE_LOOKAHEAD = 500;

/** Finds the bot's replies whose prompt recalled one of these memories (derived copies): their seqs. */
export type RecallingReplies = (channelKey: string, memoryIds: readonly string[]) => Promise<number[]>;

/**
 * The archive over `seqs` and the turns right after them (`repliesTo` reads a message's reply from
 * it), merged, in seq order: a deletion's, and `ebb forget --speaker`'s.
 */
export async function readTurnsAfter(
  channels: Pick<ArchiveReader, 'readArchive'>,
  key: string,
  seqs: readonly number[],
  lookahead = REPLY_LOOKAHEAD,
): Promise<StoredMessage[]> {
  // Each message once, however many of `seqs` lie within `lookahead` of each other.
  return readRanges(channels, key, rangesAfter(seqs, lookahead));
}

/**
 * The bot's later messages (within `QUOTE_LOOKAHEAD` of each taken-back one, not taken back yet)
 * that quote one of `removed` (`repliesQuoting`): read before the tombstones, which lose the text.
 */
export async function quotingReplies(
  channels: Pick<ArchiveReader, 'readArchive'>,
  key: string,
  removed: readonly StoredMessage[],
): Promise<StoredMessage[]> {
  const gone = new Set(removed.map((m) => m.seq));
  const later = (
    await readTurnsAfter(
      channels,
      key,
      removed.map((m) => m.seq),
      QUOTE_LOOKAHEAD,
    )
  ).filter((m) => !gone.has(m.seq) && m.text !== REDACTED_MESSAGE);
  const quoting = new Set(repliesQuoting(later, removed));
  return later.filter((m) => quoting.has(m.seq));
}

/** The bot's replies (not yet tombstoned) whose prompt recalled one of `memoryIds`; none without `recalling`. */
export async function recallingReplies(
  channels: Pick<ArchiveReader, 'readArchive'>,
  recalling: RecallingReplies | undefined,
  key: string,
  memoryIds: readonly string[],
): Promise<StoredMessage[]> {
  if (!recalling || memoryIds.length === 0) return [];
  const replies = await readRanges(channels, key, seqRanges(await recalling(key, memoryIds)));
  return replies.filter((m) => m.text !== REDACTED_MESSAGE);
}

/**
 * The results of the history tools (`search_history`, `read_history`) after the first of `ranges`
 * that quote a seq in them (copies of the messages, archived under the tool's name), and the rest
 * of the turn each one is in: the model's answer read them.
 */
export async function historyCopies(
  channels: Pick<ArchiveReader, 'readArchive'> & Pick<Forgetting, 'findAuthored'>,
  key: string,
  ranges: readonly SeqRange[],
): Promise<StoredMessage[]> {
  const after = ranges[0]?.fromSeq ?? 0;
  const seqs: number[] = [];
  for (const tool of HISTORY_TOOL_NAMES)
    for (const found of await channels.findAuthored(tool, key))
      seqs.push(...found.seqs.filter((s) => s > after));
  if (seqs.length === 0) return [];
  const results = await readRanges(channels, key, seqRanges(seqs));
  const quoting = historyResultsQuoting(results, ranges);
  if (quoting.length === 0) return [];
  const turns = await readTurnsAfter(channels, key, quoting);
  const copies = new Set([...quoting, ...turnRestAfter(turns, quoting)]);
  return turns.filter((m) => copies.has(m.seq));
}

/** The archived messages of `ranges`, one range after another. */
async function readRanges(
  channels: Pick<ArchiveReader, 'readArchive'>,
  key: string,
  ranges: Iterable<SeqRange>,
): Promise<StoredMessage[]> {
  const messages: StoredMessage[] = [];
  for (const r of ranges) messages.push(...(await channels.readArchive(key, r.fromSeq, r.toSeq)));
  return messages;
}
