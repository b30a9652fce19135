/**
 * Fenced appends (`AppendOptions.fence`): the store half of a channel lease. The lease hands each
 * holder a fence greater than every earlier one; the store keeps the greatest fence an append brought
 * and refuses one that is lower, so a holder that stalled past its lease cannot write after the next
 * holder has. Both channel stores take the same rule from here: a fence is a safe integer from 0 (up
 * to 2^53, a Postgres `bigint`), and a refusal is a `FencedAppendError`.
 *
 * A holder learns earlier, where it can, that its lease may have passed on: `ChannelLease.lost`
 * aborts with a `ChannelLeaseLostError`.
 *
 * The refusal has the lease's code (`channel_lease_lost`: the refused holder's lease is gone), but is
 * not retryable: the same append under the same fence is refused again. Nothing of it was stored; a
 * turn may run again under a new lease.
 */
import { CoreError, InvariantError } from '../support/errors.js';

export class FencedAppendError extends CoreError {
  readonly channelKey: string;
  /** The fence the refused append brought. */
  readonly fence: number;
  /** The channel's fence, greater than `fence`, where the store read it. */
  readonly storedFence: number | undefined;

  constructor(channelKey: string, fence: number, storedFence: number | undefined) {
    const stored = storedFence === undefined ? 'a greater one' : `${storedFence}`;
    super(`an append to ${channelKey} under fence ${fence} was refused: the channel is at ${stored}`, {
      code: 'channel_lease_lost',
      retryable: false,
    });
    this.channelKey = channelKey;
    this.fence = fence;
    this.storedFence = storedFence;
  }
}

/** A fence as the stores take it, or an `InvariantError` (a lease hands out no other). */
export function checkedFence(fence: number | undefined): number | undefined {
  if (fence === undefined || (Number.isSafeInteger(fence) && fence >= 0)) return fence;
  throw new InvariantError(`a fence is a safe integer from 0, not ${fence}`);
}

/**
 * How a lease was lost: `taken` (another holder has it), `expired` (gone: its TTL ran out while the
 * holder stalled, or Redis restarted empty), `unconfirmed` (no renewal answered for a TTL).
 */
export type ChannelLeaseLoss = 'taken' | 'expired' | 'unconfirmed';

/** The reason of `ChannelLease.lost`. Retryable: the turn may run again under a new lease. */
export class ChannelLeaseLostError extends CoreError {
  constructor(
    readonly channelKey: string,
    readonly loss: ChannelLeaseLoss,
  ) {
    super(`lost the lease of ${channelKey} (${loss})`, { code: 'channel_lease_lost', retryable: true });
  }
}
