/** What every suite of the store contract shares: the stores under test, and message helpers. */
import type {
  ArchiveReader,
  ChannelDirectory,
  CheckpointEraser,
  ContextMessage,
  ContextView,
  ContextWriter,
  Forgetting,
  MemoryStore,
  NewMessage,
  PlatformChanges,
  RunStore,
  TakeBackLog,
  TurnLog,
} from '@ebb/core';
import { expect } from 'vitest';

/** A channel store under test: one implementation of every channel port. */
export type ChannelStores = TurnLog &
  ArchiveReader &
  ContextWriter &
  Forgetting &
  PlatformChanges &
  ChannelDirectory;

export interface ContractStores {
  readonly channels: ChannelStores;
  readonly memories: MemoryStore;
  readonly runs: RunStore & CheckpointEraser;
  /** The take-backs `channels` records with its tombstones (the same database, or the same in-memory store's log). */
  readonly takeBacks: TakeBackLog;
  close(): Promise<void>;
}

/**
 * What one port's suite is handed for the running test: the store, typed as the port it tests and
 * the few methods of others it sets state up or reads it back through, and a channel key of its own
 * (also the prefix of any other key, scope or job id the test makes).
 */
export interface ContractContext<Store> {
  readonly store: Store;
  readonly key: string;
}

/** Messages of 10 tokens unless told otherwise. */
export function message(i: number, fields: Partial<NewMessage> = {}): NewMessage {
  return {
    role: 'user',
    author: `u${i % 3}`,
    text: `message ${i}`,
    tokens: 10,
    contextTokens: 10,
    ...fields,
  };
}

export async function appendMany(
  channels: Pick<TurnLog, 'append'>,
  key: string,
  count: number,
): Promise<void> {
  for (let i = 1; i <= count; i++) await channels.append(key, message(i, { platformMessageId: `p${i}` }));
}

/** Three tool turns (a call at seqs 1, 3, 5; its 200-token result right after), then a user message. */
export async function toolTurns(channels: Pick<TurnLog, 'append'>, key: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await channels.append(
      key,
      message(i, {
        role: 'assistant',
        author: 'ebb',
        text: '',
        toolCalls: [{ id: `c${i}`, name: 'ci.log', arguments: '{}' }],
      }),
    );
    await channels.append(
      key,
      message(i, {
        role: 'tool',
        author: 'ci.log',
        text: `log ${i}`,
        toolCallId: `c${i}`,
        tokens: 200,
        contextTokens: 200,
      }),
    );
  }
  await channels.append(key, message(7));
}

/** Microcompaction's stub (12 tokens) for the raw message at `seq`. */
export function stubOf(raw: readonly ContextMessage[], seq: number): ContextMessage {
  const m = raw.find((r) => r.seq === seq);
  if (!m) throw new Error(`no raw message ${seq}`);
  return { ...m, text: `[stub of #${seq}]`, tokens: 12, stubbed: true };
}

/** The reads `expectIntact` checks a channel through. */
export type IntactReads = Pick<TurnLog, 'loadContext' | 'loadChannel' | 'calibration'> &
  Pick<ArchiveReader, 'readArchive' | 'loadPrefix'>;

/**
 * What must hold after anything: active spans tile 1..k, raw messages are k+1..head, each seq once;
 * the context's token total is the sum of its parts; the archive still holds every message.
 */
export async function expectIntact(channels: IntactReads, key: string): Promise<ContextView> {
  const view = await channels.loadContext(key);
  const covered: number[] = [];
  for (const s of view.spans) for (let seq = s.fromSeq; seq <= s.toSeq; seq++) covered.push(seq);
  for (const m of view.raw) covered.push(m.seq);
  expect(covered).toEqual(Array.from({ length: view.headSeq }, (_, i) => i + 1));
  const recount = [...view.spans, ...view.raw].reduce((n, part) => n + part.tokens, 0);
  expect(view.tokens).toBe(recount);
  const archive = await channels.readArchive(key, 1, view.headSeq);
  expect(archive.map((m) => m.seq)).toEqual(Array.from({ length: view.headSeq }, (_, i) => i + 1));
  // The cache's load is the same context, with the calibration.
  expect(await channels.loadChannel(key)).toEqual({
    context: view,
    calibration: await channels.calibration(key),
  });
  // The prefix alone is the same prefix.
  expect(await channels.loadPrefix(key)).toEqual({
    generation: view.generation,
    headSeq: view.headSeq,
    spans: view.spans,
  });
  return view;
}

/** The tombstone of seq `seq` of `appendMany`'s messages (3 tokens), as a redaction writes it. */
export function tombstoneOf(seq: number) {
  return { seq, role: 'user' as const, author: `u${seq % 3}`, text: '[gone]', tokens: 3 };
}
