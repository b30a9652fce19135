/**
 * The conversation a message change is in, when discord.js does not know its channel. discord.js
 * drops a MESSAGE_DELETE, MESSAGE_DELETE_BULK or MESSAGE_UPDATE in a channel missing from its cache:
 * the dispatches carry no channel type to build one from. Two kinds of channel are missing:
 *
 * - a DM not seen since the client started (DMs are announced by their first message): its key
 *   needs only the channel id, so it is built from the dispatch;
 * - a guild channel no GUILD_CREATE carried, in practice an archived thread (GUILD_CREATE lists the
 *   active ones only, so after a restart every archived thread is unknown): a thread's key holds its
 *   parent, which no dispatch names, so Discord is asked (`GET /channels/{id}`).
 *
 * The answer is not cached here. `client.channels.fetch` puts the channel in discord.js's own cache,
 * so the next change in that thread (and a new message in it) takes discord.js's path with the
 * parent known; discord.js's default thread sweeper, at its hourly run, drops the threads archived
 * more than 4 h ago from that cache, which bounds it. Asks for one channel made while one is in
 * flight share it, retries included: one lookup for a burst (a member deleting several messages, a
 * RESUME's replay), and the changes are reported in the order they came.
 *
 * Nothing asks again later: Discord sends a dispatch once (a RESUME resends only the ones the client
 * missed), so a change whose lookup fails is gone. A failure that may pass (the network, a 5xx, a 429
 * discord.js gave up on: `retryable`) is tried again after core's backoff, `tries` times in all (each
 * try is discord.js's request, which itself resends a 5xx or a network failure `rest.retries` times at
 * once); a refusal (404: gone, 403: no access, `discord_channel_unknown`) is final at once. The
 * result says which, and after how many tries. A failed ask is not remembered: the next change in the
 * channel asks again.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { type Backoff, backoffDelayMs, type EbbError, LruMap } from '@ebb/core';
import type { Client } from 'discord.js';
import { discordChannelKey } from './channel-key.js';
import { DiscordError, toEbbError } from './discord-errors.js';

/** Where a dispatch happened, as far as discord.js is concerned. */
export type DispatchChannel =
  /** discord.js knows the channel and reports the change itself. */
  | { readonly kind: 'known' }
  /** A DM discord.js has not seen: keyed from the dispatch. */
  | { readonly kind: 'unknown_dm'; readonly channelKey: string }
  /** A guild channel or thread discord.js has not seen: Discord is asked what it is. */
  | { readonly kind: 'unknown_guild_channel'; readonly guildId: string; readonly channelId: string };

/** Decides where a dispatch happened; `known` says whether discord.js has the channel in its cache. */
export function dispatchChannel(
  data: { readonly channel_id: string; readonly guild_id?: string },
  known: (channelId: string) => boolean,
): DispatchChannel {
  if (known(data.channel_id)) return { kind: 'known' };
  return data.guild_id === undefined
    ? { kind: 'unknown_dm', channelKey: discordChannelKey(null, data.channel_id) }
    : { kind: 'unknown_guild_channel', guildId: data.guild_id, channelId: data.channel_id };
}

/**
 * Asks in flight at once, at most; past it the oldest is forgotten and a later ask for its channel
 * makes another (one more lookup, nothing lost, but the changes behind the two are not ordered).
 */
const PENDING_LOOKUPS = 100;

/** How an ask that failed for a reason that may pass is tried again. */
export interface ChannelLookupRetry {
  /** Tries in all, the first included. */
  readonly tries: number;
  /** The wait before each retry (core's `backoffDelayMs`). */
  readonly backoff: Backoff;
  /** Waits between tries; resolves early when the signal aborts. Injected by tests. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** 4 tries over about 1 + 2 + 4 s (half of each drawn at random, so a burst of lookups spreads). */
export const DEFAULT_CHANNEL_LOOKUP_RETRY = {
  tries: 4,
  backoff: { initialDelayMs: 1_000, maxDelayMs: 8_000, jitter: 0.5 },
  sleep,
} as const satisfies ChannelLookupRetry;

export interface ChannelKeyLookupOptions {
  readonly client: Client;
  readonly retry?: Partial<ChannelLookupRetry> | undefined;
  /** Aborting it ends the waits: an ask waiting to try again gives up with its last error. */
  readonly signal?: AbortSignal;
}

/** What an ask found: the key, or the last try's error; either way after how many tries. */
export type ChannelKeyLookupResult =
  | { readonly ok: true; readonly channelKey: string; readonly tries: number }
  | { readonly ok: false; readonly error: EbbError; readonly tries: number };

/** Asks Discord for the key of a channel discord.js does not know. */
export class ChannelKeyLookup {
  readonly #client: Client;
  readonly #retry: ChannelLookupRetry;
  readonly #signal: AbortSignal;
  readonly #pending = new LruMap<string, Promise<ChannelKeyLookupResult>>(PENDING_LOOKUPS);

  constructor(options: ChannelKeyLookupOptions) {
    this.#client = options.client;
    this.#retry = { ...DEFAULT_CHANNEL_LOOKUP_RETRY, ...options.retry };
    this.#signal = options.signal ?? new AbortController().signal;
  }

  /**
   * The key a new message in `channelId` gets (`messageChannelKey`): a thread under its parent. Never
   * rejects; a failure carries a `DiscordError`: `discord_not_found` (the channel is gone),
   * `discord_forbidden` (the bot may not see it), `discord_channel_unknown` (discord.js cannot build
   * what Discord described), or, after the last try, what else the request met.
   */
  keyOf(channelId: string): Promise<ChannelKeyLookupResult> {
    const pending = this.#pending.get(channelId);
    if (pending) return pending;
    const lookup = this.#lookUp(channelId).finally(() => {
      if (this.#pending.get(channelId) === lookup) this.#pending.delete(channelId);
    });
    this.#pending.set(channelId, lookup);
    return lookup;
  }

  /**
   * The ask in flight for `channelId`, if any: a change in that channel that discord.js reports itself
   * (it learnt of the channel meanwhile, from a THREAD_UPDATE) waits for it, to stay behind the
   * changes that came first.
   */
  inFlight(channelId: string): Promise<unknown> | undefined {
    return this.#pending.get(channelId);
  }

  async #lookUp(channelId: string): Promise<ChannelKeyLookupResult> {
    for (let tries = 1; ; tries++) {
      try {
        return { ok: true, channelKey: await this.#fetchKey(channelId), tries };
      } catch (err) {
        const error = toEbbError(err, { doing: `find channel ${channelId}` });
        if (!error.retryable || tries >= this.#retry.tries || this.#signal.aborted) {
          return { ok: false, error, tries };
        }
        await this.#retry.sleep(backoffDelayMs(this.#retry.backoff, tries), this.#signal);
        if (this.#signal.aborted) return { ok: false, error, tries };
      }
    }
  }

  async #fetchKey(channelId: string): Promise<string> {
    const doing = `find channel ${channelId}`;
    let channel: Awaited<ReturnType<Client['channels']['fetch']>>;
    try {
      channel = await this.#client.channels.fetch(channelId);
    } catch (err) {
      throw toEbbError(err, { doing });
    }
    // discord.js builds no channel for a guild it does not have or a type it does not know.
    if (!channel) {
      throw new DiscordError(`could not ${doing}: discord.js cannot build the channel Discord described`, {
        code: 'discord_channel_unknown',
      });
    }
    return discordChannelKey(
      channel.isDMBased() ? null : channel.guildId,
      channel.id,
      channel.isThread() ? channel.parentId : null,
    );
  }
}

/** Waits `ms` without holding the process open; an abort ends the wait early. */
async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal, ref: false });
  } catch {
    // Aborted: the caller checks its signal.
  }
}
