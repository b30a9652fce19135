/**
 * What `InMemoryChannelStore` keeps of each channel, and the reads its parts share: every part (the
 * turn log, the archive reader, the context writer, forgetting; `in-memory-*.ts` beside this one)
 * works on one `InMemoryChannels`, as the Postgres store's parts work on one database.
 */

import { type ChannelCounters, countersOf } from '../model/channel-counters.js';
import type { ContextView, SeqRange, StoredMessage } from '../model/model.js';
import { type Calibration, UNCALIBRATED } from '../model/tokens.js';
import { WorkingContext } from '../model/working-context.js';
import type { FoundMessage } from '../plans/plan-message-rewrite.js';
import { InvariantError } from '../support/errors.js';

export interface ChannelState {
  readonly context: WorkingContext;
  /** Whole messages; index seq - 1. */
  readonly archive: StoredMessage[];
  readonly platformIds: Map<string, number>;
  /** The memories each reply's prompt recalled, by seq (`NewMessage.recalledMemories`). */
  readonly recalled: Map<number, readonly string[]>;
  /** When each message was archived (epoch ms), as Postgres's `created_at`. */
  readonly archivedAt: Map<number, number>;
  calibration: Calibration;
  /** Microcompaction's counters (`ChannelSummary.microcompaction`). */
  readonly microcompaction: { stubbed: number; tokensSaved: number };
  /** Summary spans a splice or a forget replaced, as Postgres keeps them (retired, not deleted). */
  readonly retired: RetiredSpan[];
  /** The greatest fence an append brought (`AppendOptions.fence`); 0 before any. */
  fence: number;
}

export interface RetiredSpan {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly text: string;
  redacted: boolean;
}

export const EMPTY_VIEW: ContextView = Object.freeze({
  generation: 0,
  headSeq: 0,
  spans: [],
  raw: [],
  tokens: 0,
});

/** The channels by key: a read finds a channel or none, a write creates it. */
export class InMemoryChannels {
  readonly #channels = new Map<string, ChannelState>();

  /** The channel, or undefined when the store holds no such channel. */
  get(channelKey: string): ChannelState | undefined {
    return this.#channels.get(channelKey);
  }

  has(channelKey: string): boolean {
    return this.#channels.has(channelKey);
  }

  keys(): IterableIterator<string> {
    return this.#channels.keys();
  }

  entries(): IterableIterator<[string, ChannelState]> {
    return this.#channels.entries();
  }

  /** The channel, created empty when the store holds none yet: what a write works on. */
  getOrCreate(channelKey: string): ChannelState {
    let channel = this.#channels.get(channelKey);
    if (!channel) {
      channel = {
        context: new WorkingContext(),
        archive: [],
        retired: [],
        microcompaction: { stubbed: 0, tokensSaved: 0 },
        platformIds: new Map(),
        recalled: new Map(),
        archivedAt: new Map(),
        calibration: UNCALIBRATED,
        fence: 0,
      };
      this.#channels.set(channelKey, channel);
    }
    return channel;
  }

  /** A copy of the channel's context: the caller's view does not move with later writes. */
  viewOf(channelKey: string): ContextView {
    const view = this.#channels.get(channelKey)?.context.view();
    if (!view) return EMPTY_VIEW;
    return { ...view, spans: [...view.spans], raw: [...view.raw] };
  }

  /** The channel's counters, as a write plans on them; undefined when the store holds no such channel. */
  counters(channelKey: string): ChannelCounters | undefined {
    const view = this.#channels.get(channelKey)?.context.view();
    return view && countersOf(view);
  }

  /**
   * The archived messages at `seqs` (those the archive holds, each once), with the tokens of their
   * raw copy where they are raw: what a rewrite plans on (see `FoundMessage`).
   */
  found(channelKey: string, seqs: readonly number[]): FoundMessage[] {
    const channel = this.#channels.get(channelKey);
    if (!channel) return [];
    const raw = new Map(channel.context.view().raw.map((m) => [m.seq, m]));
    return [...new Set(seqs)].flatMap((seq) => {
      const stored = channel.archive[seq - 1];
      return stored?.seq === seq ? [{ seq, tokens: (raw.get(seq) ?? stored).tokens }] : [];
    });
  }
}

/** The archived message at `seq`, which a plan found there. */
export function storedAt(channel: ChannelState, seq: number): StoredMessage {
  const stored = channel.archive[seq - 1];
  if (stored?.seq !== seq) throw new InvariantError(`the archive holds no seq ${seq}`);
  return stored;
}

export function rangeOf(span: SeqRange): SeqRange {
  return { fromSeq: span.fromSeq, toSeq: span.toSeq };
}
