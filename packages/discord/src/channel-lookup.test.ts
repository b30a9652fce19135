/**
 * The key of a channel discord.js does not know: the decision read from a dispatch, and the lookup
 * with the real discord.js client against FakeDiscord's REST API (an archived thread, which no
 * GUILD_CREATE carries, stands for every channel the client has not heard of), retries included.
 */
import { FakeDiscord } from '@ebb/testing/discord';
import { Client, Events, GatewayIntentBits } from 'discord.js';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { discordChannelKey } from './channel-key.js';
import { ChannelKeyLookup, type ChannelKeyLookupOptions, dispatchChannel } from './channel-lookup.js';

/**
 * A discord.js client logged in to a fresh FakeDiscord (`login: false`: its REST token only, no
 * guilds), and a lookup on it; `lookup` overrides the lookup's options.
 */
async function connect({
  login = true,
  lookup = {},
}: {
  login?: boolean;
  lookup?: Omit<ChannelKeyLookupOptions, 'client'>;
} = {}) {
  const fake = await FakeDiscord.start();
  const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.restApi } });
  onTestFinished(async () => {
    await client.destroy();
    await fake.close();
  });
  if (login) {
    const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
    await client.login(fake.token);
    await ready;
  } else {
    client.rest.setToken(fake.token);
  }
  const general = fake.guild.channel('general');
  /** The statuses the fake answered `GET /channels/{id}` with, oldest first. */
  const statuses = (id: string) =>
    fake.requests.filter((r) => r.method === 'GET' && r.route === `/channels/${id}`).map((r) => r.status);
  const gets = (id: string) => statuses(id).length;
  return {
    fake,
    client,
    general,
    gets,
    statuses,
    lookup: new ChannelKeyLookup({ client, ...lookup }),
  };
}

/** What `keyOf` answers for a channel found on try `tries`. */
const found = (channelKey: string, tries = 1) => ({ ok: true, channelKey, tries });
/** What `keyOf` answers for a channel not found, after `tries`, with an error of `code`. */
const notFound = (code: string, tries = 1) => ({
  ok: false,
  error: expect.objectContaining({ code }),
  tries,
});

describe('dispatchChannel', () => {
  const known = (id: string) => id === '10';

  it('leaves a known channel to discord.js, keys an unknown DM from the dispatch, and asks for the rest', () => {
    expect(dispatchChannel({ channel_id: '10', guild_id: '1' }, known)).toEqual({ kind: 'known' });
    expect(dispatchChannel({ channel_id: '10' }, known)).toEqual({ kind: 'known' });
    expect(dispatchChannel({ channel_id: '20' }, known)).toEqual({
      kind: 'unknown_dm',
      channelKey: 'discord:dm:20',
    });
    expect(dispatchChannel({ channel_id: '30', guild_id: '1' }, known)).toEqual({
      kind: 'unknown_guild_channel',
      guildId: '1',
      channelId: '30',
    });
  });
});

describe('ChannelKeyLookup', () => {
  it('keys an archived thread, public or private, under its parent as a new message in it is keyed', async () => {
    const { fake, client, general, gets, lookup } = await connect();
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const secret = fake.addThread(fake.guild, {
      name: 'secret',
      parent: general,
      private: true,
      archived: true,
    });
    expect(client.channels.cache.has(archived.id)).toBe(false);

    const archivedKey = discordChannelKey(fake.guild.id, archived.id, general.id);
    expect(await lookup.keyOf(archived.id)).toEqual(found(archivedKey));
    expect(await lookup.keyOf(secret.id)).toEqual(
      found(discordChannelKey(fake.guild.id, secret.id, general.id)),
    );
    expect(await lookup.keyOf(general.id)).toEqual(found(discordChannelKey(fake.guild.id, general.id)));
    // discord.js keeps what it fetched: the thread is known from now on, and not asked for again.
    expect(client.channels.cache.get(archived.id)?.isThread()).toBe(true);
    expect(await lookup.keyOf(archived.id)).toEqual(found(archivedKey));
    expect(gets(archived.id)).toBe(1);
  });

  it('asks once for a burst of changes in one channel, and answers them in the order they came', async () => {
    const { fake, general, gets, lookup } = await connect();
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const order: number[] = [];

    const results = await Promise.all(
      [1, 2, 3].map((n) =>
        lookup.keyOf(archived.id).then((result) => {
          order.push(n);
          return result;
        }),
      ),
    );

    expect(results).toEqual(
      [1, 2, 3].map(() => found(discordChannelKey(fake.guild.id, archived.id, general.id))),
    );
    expect(order).toEqual([1, 2, 3]);
    expect(gets(archived.id)).toBe(1);
  });

  it('says why Discord would not, at once: gone (404), no access (403), or a guild discord.js lacks', async () => {
    const sleeps: number[] = [];
    const retry = { sleep: async (ms: number) => void sleeps.push(ms) };
    const { fake, general, gets, lookup } = await connect({ lookup: { retry } });
    const hidden = fake.addThread(fake.guild, { name: 'hidden', parent: general, archived: true });
    fake.denyAccess(hidden);
    const gone = fake.snowflake();

    expect(await lookup.keyOf(gone)).toEqual(notFound('discord_not_found'));
    expect(await lookup.keyOf(hidden.id)).toEqual(notFound('discord_forbidden'));
    expect(gets(hidden.id)).toBe(1);
    // A failure is not remembered: the next change asks again.
    expect(await lookup.keyOf(gone)).toEqual(notFound('discord_not_found'));
    expect(gets(gone)).toBe(2);

    const bare = await connect({ login: false, lookup: { retry } });
    expect(await bare.lookup.keyOf(bare.general.id)).toEqual(notFound('discord_channel_unknown'));
    expect(bare.gets(bare.general.id)).toBe(1);
    expect(sleeps).toEqual([]);
  });

  it("tries a failure that may pass (a 5xx) again after core's backoff, and gives up after the last try with its error", async () => {
    const sleeps: number[] = [];
    const { fake, general, statuses, lookup } = await connect({
      lookup: {
        retry: {
          tries: 4,
          backoff: { initialDelayMs: 10, maxDelayMs: 30 },
          sleep: async (ms) => void sleeps.push(ms),
        },
      },
    });
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const flaky = fake.addThread(fake.guild, { name: 'flaky', parent: general, archived: true });
    // discord.js sends a GET that met a 5xx 3 more times before it throws: 4 answers fail one try.
    const route = (channel: { id: string }) => `channels/${channel.id}`;
    fake.serverError({ method: 'GET', route: route(archived), times: 3 * 4, status: 500 });
    fake.serverError({ method: 'GET', route: route(archived), times: 4, status: 503 });
    fake.serverError({ method: 'GET', route: route(flaky), times: 2 * 4, status: 502 });

    const failed = await lookup.keyOf(archived.id);
    expect(failed).toEqual(notFound('discord_http_error', 4));
    expect(failed.ok ? '' : failed.error.message).toMatch(/Discord answered 503/);
    expect(statuses(archived.id)).toEqual([...Array(12).fill(500), 503, 503, 503, 503]);
    expect(sleeps).toEqual([10, 20, 30]);

    sleeps.length = 0;
    expect(await lookup.keyOf(flaky.id)).toEqual(
      found(discordChannelKey(fake.guild.id, flaky.id, general.id), 3),
    );
    expect(statuses(flaky.id)).toEqual([...Array(8).fill(502), 200]);
    expect(sleeps).toEqual([10, 20]);
  });

  it('gives up waiting to try again when its signal aborts, with the last error', async () => {
    const stopping = new AbortController();
    let waiting = 0;
    const { fake, general, gets, lookup } = await connect({
      lookup: {
        signal: stopping.signal,
        retry: {
          // Waits until aborted, however long the backoff.
          sleep: (_ms, signal) =>
            new Promise<void>((resolve) => {
              waiting++;
              signal.addEventListener('abort', () => resolve(), { once: true });
            }),
        },
      },
    });
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    fake.serverError({ method: 'GET', route: `channels/${archived.id}`, times: Infinity });

    const result = lookup.keyOf(archived.id);
    await vi.waitFor(() => expect(waiting).toBe(1));
    stopping.abort();

    expect(await result).toEqual(notFound('discord_http_error', 1));
    expect(gets(archived.id)).toBe(4);
  });
});
