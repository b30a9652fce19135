/**
 * The key of a channel discord.js does not know: the decision read from a dispatch, and the lookup
 * with the real discord.js client against FakeDiscord's REST API (an archived thread, which no
 * GUILD_CREATE carries, stands for every channel the client has not heard of).
 */
import { FakeDiscord } from '@ebb/testing/discord';
import { Client, Events, GatewayIntentBits } from 'discord.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { discordChannelKey } from './channel-key.js';
import { ChannelKeyLookup, dispatchChannel } from './channel-lookup.js';

/** A discord.js client logged in to a fresh FakeDiscord (`login: false`: its REST token only, no guilds). */
async function connect({ login = true } = {}) {
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
  const gets = (id: string) =>
    fake.requests.filter((r) => r.method === 'GET' && r.route === `/channels/${id}`).length;
  return { fake, client, general, gets, lookup: new ChannelKeyLookup(client) };
}

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

    expect(await lookup.keyOf(archived.id)).toBe(discordChannelKey(fake.guild.id, archived.id, general.id));
    expect(await lookup.keyOf(secret.id)).toBe(discordChannelKey(fake.guild.id, secret.id, general.id));
    expect(await lookup.keyOf(general.id)).toBe(discordChannelKey(fake.guild.id, general.id));
    // discord.js keeps what it fetched: the thread is known from now on, and not asked for again.
    expect(client.channels.cache.get(archived.id)?.isThread()).toBe(true);
    expect(await lookup.keyOf(archived.id)).toBe(discordChannelKey(fake.guild.id, archived.id, general.id));
    expect(gets(archived.id)).toBe(1);
  });

  it('asks once for a burst of changes in one channel, and answers them in the order they came', async () => {
    const { fake, general, gets, lookup } = await connect();
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const order: number[] = [];

    const keys = await Promise.all(
      [1, 2, 3].map((n) =>
        lookup.keyOf(archived.id).then((key) => {
          order.push(n);
          return key;
        }),
      ),
    );

    expect(new Set(keys)).toEqual(new Set([discordChannelKey(fake.guild.id, archived.id, general.id)]));
    expect(order).toEqual([1, 2, 3]);
    expect(gets(archived.id)).toBe(1);
  });

  it('rejects with why Discord would not say: gone (404), no access (403), or a guild discord.js lacks', async () => {
    const { fake, general, gets, lookup } = await connect();
    const hidden = fake.addThread(fake.guild, { name: 'hidden', parent: general, archived: true });
    fake.denyAccess(hidden);
    const gone = fake.snowflake();

    await expect(lookup.keyOf(gone)).rejects.toMatchObject({ code: 'discord_not_found' });
    await expect(lookup.keyOf(hidden.id)).rejects.toMatchObject({ code: 'discord_forbidden' });
    // A failure is not remembered: the next change asks again.
    await expect(lookup.keyOf(gone)).rejects.toMatchObject({ code: 'discord_not_found' });
    expect(gets(gone)).toBe(2);

    const bare = await connect({ login: false });
    await expect(bare.lookup.keyOf(bare.general.id)).rejects.toMatchObject({
      code: 'discord_channel_unknown',
    });
  });
});
