/**
 * One turn's value: the channel it runs in, the channel's cached state (context and calibration),
 * the settings and tokenizer resolved for it, and the logger bound to it. Built once per turn
 * (`openTurn`) and passed down the turn path, instead of the same four or five positional arguments
 * at every step.
 *
 * `ChannelState` lives here, not in `channel-states.ts`, so the cache can take a turn without the
 * two modules importing each other.
 */
import { type EbbConfig, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import type {
  Calibration,
  InboundMessage,
  Logger,
  SpooledMessage,
  Tokenizer,
  WorkingContext,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';

export interface ChannelState {
  context: WorkingContext;
  calibration: Calibration;
  /** The newest generation a context-changed notification announced: the context is stale while older. */
  notified: number;
  /** The generation the compactor was last told of; a newer context may hold passes that landed. */
  reported: number;
}

export interface Turn {
  readonly key: string;
  /** Shared with the cache: the turn's appends, cuts and calibration land in it (`state.calibration`). */
  readonly state: ChannelState;
  readonly tokenizer: Tokenizer;
  readonly settings: ResolvedChannelConfig;
  /** Bound to the channel (`{ channel: key }`). */
  readonly log: Logger;
  /** The model this turn answers on instead of `[llm] model` (`[budget] over = "cheaper_model"`). */
  readonly model?: string;
}

/**
 * What a write into the channel's archive and cached context needs of a turn (it logs nothing), and
 * the fence of the channel lease it holds, if any: every append of the turn is made under it
 * (`AppendOptions.fence`), so the store refuses it once the lease has passed on.
 */
export type TurnChannel = Pick<Turn, 'key' | 'state' | 'tokenizer' | 'settings'> & {
  readonly fence?: number;
};

/**
 * The channel's turn: its settings from `config`, their tokenizer, then its state from the cache
 * (read in that order, so a config or tokenizer failure never loads the channel).
 */
export async function openTurn(
  key: string,
  config: EbbConfig,
  states: { get(key: string): Promise<ChannelState> },
  log: Logger,
): Promise<Turn> {
  const settings = resolveChannel(config, key);
  const tokenizer = await loadTokenizer(settings.llm.encoding);
  const state = await states.get(key);
  return { key, state, tokenizer, settings, log };
}

/** A message's turn before its channel is opened: what each of its steps knows. */
export interface Arrival {
  readonly message: InboundMessage;
  /** The message as the archive (or, while it is away, the spool) takes it. */
  readonly incoming: SpooledMessage;
  /** Bound to the channel. */
  readonly log: Logger;
  readonly started: number;
  /** The channel's lease's fence (`turn-leases.ts`), checked by every append of the turn; none unleased. */
  readonly fence?: number;
}

/** A message's turn once its channel's settings and state are read. */
export type MessageTurn = Turn & Arrival;
