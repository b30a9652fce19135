/**
 * A message posted to a web channel is shown on the channel's event stream once it is archived, and
 * never otherwise: one sent again with the same id (a `duplicate`) or one the store refused is not
 * shown at all, so a retry never shows a message twice.
 *
 * The bot says when a turn ends, not when it archives. But a channel's turns run one at a time, in
 * the order the adapter hands them over (the bot's channel actor), and the bot calls `typing` or
 * `send` for a channel only inside a turn whose message it has archived. So the channel's oldest
 * unfinished message is the running turn's: it is shown at that turn's first `typing` or `send` (so
 * before the reply, and as soon as the model is asked), or, for a message the bot does not answer,
 * when the turn ends archived.
 *
 * The map holds only messages whose requests are in hand (each leaves when its turn ends), so it is
 * as bounded as the requests are (rate limit, connections).
 */

/** A message waiting for its turn to say it is archived. */
export interface PendingEcho {
  readonly channelKey: string;
  shown: boolean;
  readonly show: () => void;
}

export class ArchivedEchoes {
  /** Per channel, the messages whose turns are queued or running, oldest (the running one) first. */
  readonly #pending = new Map<string, PendingEcho[]>();

  /** A message about to be handed to the bot; call `settle` when its turn ends, however it ends. */
  add(channelKey: string, show: () => void): PendingEcho {
    const echo: PendingEcho = { channelKey, shown: false, show };
    const queue = this.#pending.get(channelKey);
    if (queue) queue.push(echo);
    else this.#pending.set(channelKey, [echo]);
    return echo;
  }

  /** The bot acts in the channel's running turn (`typing`, `send`): that turn's message is archived. */
  acting(channelKey: string): void {
    const running = this.#pending.get(channelKey)?.[0];
    if (running) this.#show(running);
  }

  /** The turn ended: its message is shown if it was archived (and not yet shown), then forgotten. */
  settle(echo: PendingEcho, archived: boolean): void {
    if (archived) this.#show(echo);
    const queue = this.#pending.get(echo.channelKey);
    if (!queue) return;
    const at = queue.indexOf(echo);
    if (at >= 0) queue.splice(at, 1);
    if (queue.length === 0) this.#pending.delete(echo.channelKey);
  }

  #show(echo: PendingEcho): void {
    if (echo.shown) return;
    echo.shown = true;
    echo.show();
  }
}
