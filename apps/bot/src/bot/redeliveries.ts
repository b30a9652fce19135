/**
 * Who answers a stored message when it arrives more than once (a platform's retry, a client's resend
 * to another replica): the answer claims (`AnswerClaims`, across replicas) and the redelivery step.
 *
 * A message answered by an unleased turn is claimed first, so two deliveries of it never both answer;
 * under the channel's lease the claim would add nothing (another delivery waits for the lease, then
 * finds the reply). A redelivery gets the reply archived after the message; when there is none (the
 * first turn died, or failed after storing it) it runs the answer step itself, under the claim,
 * waiting while another delivery's turn holds it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AnswerClaim, AnswerClaims, ArchiveReader, Logger, TurnResult } from '@ebb/core';
import type { MessageTurn } from './turn.js';

/** Messages read past a redelivered one to find its reply: room for a turn's tool steps. */
const ORIGINAL_LOOKAHEAD = 200;
/** How often a turn asks again for a message's claim while another delivery's turn holds it. */
const CLAIM_RETRY_MS = 200;

export interface RedeliveriesOptions {
  /** Who answers a message across replicas; without it this process's channel actors are the only guard. */
  readonly claims?: AnswerClaims;
  readonly channels: Pick<ArchiveReader, 'readArchive'>;
  readonly logger: Logger;
  /** Aborted when the bot starts stopping: a turn waiting for a claim ends without answering. */
  readonly stopping: AbortSignal;
}

/** A turn's right to answer its message, or the reply another delivery's turn archived meanwhile. */
export type AnswerRight =
  | { kind: 'claimed'; claim?: AnswerClaim }
  | { kind: 'answered'; reply: string | null };

export class Redeliveries {
  readonly #options: RedeliveriesOptions;
  /** Claiming answers failed, and has not worked since (logged once per run of failures). */
  #claimsFailing = false;

  constructor(options: RedeliveriesOptions) {
    this.#options = options;
  }

  /**
   * A message stored before under its platform id: its reply, when the archive holds one. A message
   * to answer whose first turn left no reply (it died, or failed after storing it) is answered now,
   * under its claim: while another delivery's turn holds the claim this one waits, then returns the
   * reply that turn archived, so two deliveries never both answer.
   */
  async redelivered(
    turn: MessageTurn,
    seq: number,
    answer: boolean,
    answerStep: (turn: MessageTurn, seq: number, answer: boolean) => Promise<TurnResult>,
  ): Promise<TurnResult> {
    const { key, message, log } = turn;
    const original = await this.original(key, seq);
    // A different text under the id is a conflict, never answered; an unreadable archive, no answer.
    if (!answer || original === undefined || original.reply !== null || original.text !== message.text)
      return { reply: null, archived: 'duplicate', ...(original ? { original } : {}) };
    const right = await this.claimAnswer(turn, seq, true);
    if (right.kind === 'answered')
      return { reply: null, archived: 'duplicate', original: { text: original.text, reply: right.reply } };
    try {
      log.info(
        { event: 'turn.redelivery_answered', seq },
        'answering a redelivered message its first turn left unanswered',
      );
      const result = await answerStep(turn, seq, true);
      return {
        ...result,
        archived: 'duplicate',
        original: { text: original.text, reply: result.reply },
      };
    } finally {
      await right.claim?.release();
    }
  }
  /**
   * The right to answer a stored message: its claim (none to take without `claims`, or with Redis
   * away), or the reply another delivery's turn archived while this one waited for the claim. With
   * `recheck` (a redelivery, which found no reply before it asked) the archive is read again once the
   * claim is taken, as it is after any wait: the holder before may have answered.
   */
  async claimAnswer(
    { key, message, log, fence }: MessageTurn,
    seq: number,
    recheck: boolean,
  ): Promise<AnswerRight> {
    const claims = this.#options.claims;
    // Under the channel's lease no other turn of the channel runs: another delivery waits for the
    // lease, then finds the reply. So a retry after a replica died waits for its lease (3 s), not
    // also for its claim (5 s).
    if (!claims || fence !== undefined) return { kind: 'claimed' };
    for (let waited = false; ; waited = true) {
      let claim: AnswerClaim | undefined;
      try {
        claim = await claims.claim(key, message.platformMessageId);
      } catch (err) {
        // Redis away: no replica can be asked. This process's own deliveries are still one at a time.
        if (!this.#claimsFailing)
          log.warn(
            { event: 'turn.claim_unavailable', err },
            'could not claim the answer to a message; answering without claims until they work again',
          );
        this.#claimsFailing = true;
        return { kind: 'claimed' };
      }
      this.#claimsFailing = false;
      if (claim) {
        if (!recheck && !waited) return { kind: 'claimed', claim };
        const original = await this.original(key, seq);
        if (original !== undefined && original.reply === null) return { kind: 'claimed', claim };
        await claim.release();
        return { kind: 'answered', reply: original?.reply ?? null };
      }
      // Stopping: the turn in hand ends without answering rather than hold the drain.
      if (this.#options.stopping.aborted) return { kind: 'answered', reply: null };
      await sleep(CLAIM_RETRY_MS);
    }
  }
  /**
   * A redelivered message as the archive holds it, and the reply archived after it (if any): the
   * first assistant message that calls no tools, past the tool steps of its turn.
   */
  async original(key: string, seq: number): Promise<TurnResult['original']> {
    try {
      const [message, ...after] = await this.#options.channels.readArchive(
        key,
        seq,
        seq + ORIGINAL_LOOKAHEAD,
      );
      if (!message) return undefined;
      const end = after.findIndex((m) => m.role === 'user');
      const turn = end < 0 ? after : after.slice(0, end);
      const reply = turn.find((m) => m.role === 'assistant' && (m.toolCalls?.length ?? 0) === 0);
      return { text: message.text, reply: reply?.text ?? null };
    } catch (err) {
      this.#options.logger.warn(
        { event: 'turn.redelivery_unreadable', err, channel: key, seq },
        'could not read a redelivered message back',
      );
      return undefined;
    }
  }
}
