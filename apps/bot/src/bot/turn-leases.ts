/**
 * One turn at a time per channel across replicas. A turn takes its channel's lease
 * (`ChannelLeases`, on Redis) before it stores its message and holds it until its reply is stored,
 * so no other replica's message lands between a message and its reply, and every turn starts from
 * the channel as the previous turn left it. The lease's fence goes with every append of the turn:
 * a holder that stalled past its lease, which passed on, cannot write (the store refuses it).
 *
 * Without leases (one process, the embedded queue) the channel's actor is the only order, which is
 * enough for one process. With Redis away the same holds per replica: turns go on unleased and
 * unfenced, logged once per run of failures (`turn.lease_unavailable`).
 */
import type { ChannelLease, ChannelLeases, Logger } from '@ebb/core';

export class TurnLeases {
  readonly #leases: ChannelLeases | undefined;
  /** Aborted when the grace period of a stop runs out: a turn still waiting is refused. */
  readonly #deadline: AbortSignal;
  #failing = false;

  constructor(leases: ChannelLeases | undefined, deadline: AbortSignal) {
    this.#leases = leases;
    this.#deadline = deadline;
  }

  /**
   * The channel's lease, waited for in turn; undefined without leases or with Redis away; `stopping`
   * when the grace period of a stop ran out while it waited.
   */
  async take(channelKey: string, log: Logger): Promise<ChannelLease | undefined | 'stopping'> {
    if (!this.#leases) return undefined;
    try {
      const lease = await this.#leases.acquire(channelKey, this.#deadline);
      this.#failing = false;
      return lease;
    } catch (err) {
      if (this.#deadline.aborted) return 'stopping';
      if (!this.#failing)
        log.warn(
          { event: 'turn.lease_unavailable', err },
          "could not take the channel's lease; this replica orders its turns alone until leases work again",
        );
      this.#failing = true;
      return undefined;
    }
  }
}
