/** How replicas' cached copies of a channel follow each other's appends without reading them back. */
import type { ContextDelta } from './ports.js';

/**
 * A replica's appends to a channel as they are made, heard by the other replicas so their cached
 * copies of the channel follow without reading the messages back (`ChannelStates.heard`). What is
 * sent is a `ContextDelta`: the channel's generation, head and context tokens after the appends, and
 * the appended messages as the working context holds them. Best effort: a notice lost, late or not
 * continuing a hearer's copy costs that hearer one read of the tail (`TurnLog.loadAfter`) at its next
 * append, as without a feed.
 */
export interface AppendFeed {
  /** Sends without waiting for it, and never throws: a notice that could not be sent is one lost. */
  publish(channelKey: string, appended: ContextDelta): void;
  /** Resolves once notices are heard (another replica's, not this one's own); the function unsubscribes. */
  subscribe(listener: (channelKey: string, appended: ContextDelta) => void): Promise<() => Promise<void>>;
}
