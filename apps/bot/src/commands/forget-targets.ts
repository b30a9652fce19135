/**
 * What `ebb forget` redacts in each channel: the messages its selection names (`--speaker`, `--match`,
 * or the sources of the forgotten memories), the bot's replies to the speaker's messages (`--speaker`:
 * the turn that answered each, as a deletion on the platform reaches it), and the results of the
 * history tools that quote them.
 * A `search_history` or `read_history` result is a copy of other people's messages archived under the
 * tool's name, so `--speaker` alone would leave the words there for the next summary or search.
 */
import { patternMatches } from '@ebb/config';
import {
  HISTORY_TOOL_NAMES,
  historyResultsQuoting,
  type Memory,
  repliesTo,
  type SeqRange,
  seqRanges,
  seqsOf,
  turnRestAfter,
} from '@ebb/core';
import { readTurnsAfter } from '../bot/take-back-copies.js';
import type { StoreSession } from './store-session.js';

export interface SourcedMemory {
  readonly memory: Memory;
  readonly channelKey: string;
}

export interface ForgetSelection {
  readonly channel?: string | undefined;
  readonly speaker?: string | undefined;
  readonly match?: string | undefined;
}

/** The channel keys `--channel` names: a key, a glob over the stored keys, or (absent) every stored key. */
export async function channelKeys(session: StoreSession, pattern: string | undefined): Promise<string[]> {
  if (pattern !== undefined && !pattern.includes('*')) return [pattern];
  const keys = (await session.channels.listChannels()).map((c) => c.key);
  return pattern === undefined ? keys : keys.filter((key) => patternMatches(pattern, key));
}

/**
 * What must leave each channel's working context: with `--speaker`, every message the speaker wrote,
 * and with `--match`, every message holding the text (in the `--channel` selection); otherwise the
 * source messages of the forgotten memories. Then, in each channel, the history tools' results that
 * quote any of those.
 */
export async function redactionsFor(
  session: StoreSession,
  args: ForgetSelection,
  targets: readonly SourcedMemory[],
): Promise<{ channelKey: string; ranges: SeqRange[] }[]> {
  const seqs = new Map<string, number[]>();
  if (args.speaker !== undefined || args.match !== undefined) {
    const authored = args.speaker === undefined ? [] : await session.channels.findAuthored(args.speaker);
    const found = [
      ...authored,
      ...(args.match === undefined ? [] : await session.channels.findContaining(args.match)),
    ];
    for (const { channelKey, seqs: list } of found) {
      if (args.channel !== undefined && !patternMatches(args.channel, channelKey)) continue;
      seqs.set(channelKey, [...(seqs.get(channelKey) ?? []), ...list]);
    }
    // What the bot said back to the speaker repeats what they said: it goes with them.
    for (const { channelKey, seqs: list } of authored) {
      if (args.channel !== undefined && !patternMatches(args.channel, channelKey)) continue;
      const replies = repliesTo(await readTurnsAfter(session.channels, channelKey, list), list);
      seqs.set(channelKey, [...(seqs.get(channelKey) ?? []), ...replies]);
    }
  } else {
    for (const { memory, channelKey } of targets) {
      // The messages the summarizer named as the memory's source, cut to its pass: validation never
      // widens them (a memory that named none of its pass is not stored), so one memory never
      // redacts the whole pass it was learned in.
      const range = seqsOf([{ fromSeq: memory.fromSeq, toSeq: memory.toSeq }]);
      seqs.set(channelKey, [...(seqs.get(channelKey) ?? []), ...range]);
    }
  }
  const copies = await historyResults(session);
  const redactions: { channelKey: string; ranges: SeqRange[] }[] = [];
  for (const [channelKey, list] of [...seqs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const ranges = seqRanges(list);
    const quoting: number[] = [];
    for (const seq of copies.get(channelKey) ?? []) {
      quoting.push(
        ...historyResultsQuoting(await session.channels.readArchive(channelKey, seq, seq), ranges),
      );
    }
    // The rest of each quoting result's turn is the answer that read it: it goes too.
    const answers =
      quoting.length === 0
        ? []
        : turnRestAfter(await readTurnsAfter(session.channels, channelKey, quoting), quoting);
    redactions.push({
      channelKey,
      ranges: quoting.length === 0 ? ranges : seqRanges([...list, ...quoting, ...answers]),
    });
  }
  return redactions;
}

/** The seqs of the history tools' results, per channel (the tool's name is their author). */
async function historyResults(session: StoreSession): Promise<Map<string, number[]>> {
  const byChannel = new Map<string, number[]>();
  for (const tool of HISTORY_TOOL_NAMES) {
    for (const { channelKey, seqs } of await session.channels.findAuthored(tool)) {
      byChannel.set(channelKey, [...(byChannel.get(channelKey) ?? []), ...seqs]);
    }
  }
  return byChannel;
}
