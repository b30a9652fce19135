/**
 * The adapter with the real discord.js client against FakeDiscord (REST and gateway on 127.0.0.1).
 */
import { FakeDiscord, snowflakeTimestamp, type WireChannel } from '@ebb/testing/discord';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { setup } from '../test/discord-adapter-harness.js';
import { discordChannelKey } from './channel-key.js';
import { DiscordAdapter } from './discord-adapter.js';

/** Gateway round trips (a resume waits 500 ms first) can be slow on a loaded machine. */
const eventually = { timeout: 10_000 } as const;

function keyOf(channel: WireChannel): string {
  return discordChannelKey(channel.guild_id ?? null, channel.id, channel.parent_id ?? null);
}

describe('DiscordAdapter inbound messages', () => {
  it('delivers guild channel, thread and DM messages with their keys and flags', async () => {
    const { fake, messages, alice, general, thread } = await setup();
    const dm = fake.dm(alice);

    const inGuild = fake.postMessage({
      channel: general,
      author: alice,
      content: 'morning all',
      nick: 'Ali',
    });
    const inThread = fake.postMessage({ channel: thread, author: alice, content: 'ship it?' });
    const direct = fake.postMessage({ channel: dm, author: alice, content: 'psst' });

    await vi.waitFor(() => expect(messages).toHaveLength(3), eventually);
    expect(messages).toEqual([
      {
        platform: 'discord',
        channelKey: `discord:${fake.guild.id}:${general.id}`,
        platformMessageId: inGuild.id,
        authorId: alice.id,
        authorName: 'Ali',
        fromBot: false,
        text: 'morning all',
        ts: new Date(snowflakeTimestamp(inGuild.id)).toISOString(),
        mentionsBot: false,
        direct: false,
      },
      expect.objectContaining({
        // A thread is keyed under its channel, as Slack threads are.
        channelKey: `discord:${fake.guild.id}:${general.id}:${thread.id}`,
        platformMessageId: inThread.id,
        authorName: 'Alice Liddell',
        direct: false,
      }),
      expect.objectContaining({
        channelKey: `discord:dm:${dm.id}`,
        platformMessageId: direct.id,
        authorName: 'Alice Liddell',
        text: 'psst',
        direct: true,
      }),
    ]);
  });

  it("drops the bot's own messages and delivers another bot's with fromBot", async () => {
    const { fake, messages, general } = await setup();
    const helper = fake.createUser({ username: 'helper-bot', bot: true });

    fake.postMessage({ channel: general, author: fake.bot, content: 'my own words' });
    const other = fake.postMessage({ channel: general, author: helper, content: 'beep' });

    // Dispatches arrive in order: once the other bot's message is in, the own one was seen and dropped.
    await vi.waitFor(() => expect(messages.map((m) => m.platformMessageId)).toContain(other.id), eventually);
    expect(messages).toEqual([expect.objectContaining({ authorId: helper.id, fromBot: true, text: 'beep' })]);
  });

  it('flags mentions of the bot and writes them as @name', async () => {
    const { fake, messages, alice, general } = await setup();

    fake.postMessage({
      channel: general,
      author: alice,
      content: `hey <@${fake.bot.id}>, ask <@!${fake.bot.id}> not <@${alice.id}>`,
    });
    fake.postMessage({
      channel: general,
      author: alice,
      content: 'a reply that pings',
      mentions: [fake.bot],
    });
    fake.postMessage({ channel: general, author: alice, content: `just talking to <@${alice.id}>` });

    await vi.waitFor(() => expect(messages).toHaveLength(3), eventually);
    expect(messages.map((m) => [m.text, m.mentionsBot])).toEqual([
      [`hey @ebb, ask @ebb not <@${alice.id}>`, true],
      ['a reply that pings', true],
      [`just talking to <@${alice.id}>`, false],
    ]);
  });

  it('uses the configured bot name in rewritten mentions', async () => {
    const { fake, messages, alice, general } = await setup({ adapter: () => ({ botName: 'Ebb' }) });

    fake.postMessage({ channel: general, author: alice, content: `<@${fake.bot.id}> summarize` });

    await vi.waitFor(() => expect(messages).toHaveLength(1), eventually);
    expect(messages[0]?.text).toBe('@Ebb summarize');
  });
});

describe('DiscordAdapter replies', () => {
  it('posts into guild channels, threads and DMs and never hands its own messages back', async () => {
    const { fake, adapter, messages, alice, general, thread } = await setup();
    const dm = fake.dm(alice);

    const inGuild = await adapter.send(keyOf(general), 'hello channel');
    const inThread = await adapter.send(keyOf(thread), 'hello thread');
    const direct = await adapter.send(`discord:dm:${dm.id}`, 'hello you');

    expect(fake.posted.map((m) => [m.channel_id, m.content, m.id])).toEqual([
      [general.id, 'hello channel', inGuild.platformMessageId],
      [thread.id, 'hello thread', inThread.platformMessageId],
      [dm.id, 'hello you', direct.platformMessageId],
    ]);
    // The fake echoes each post as MESSAGE_CREATE, as Discord does; a later message is a barrier.
    const barrier = fake.postMessage({ channel: general, author: alice, content: 'thanks' });
    await vi.waitFor(
      () => expect(messages.map((m) => m.platformMessageId)).toContain(barrier.id),
      eventually,
    );
    expect(messages).toHaveLength(1);
  });

  it('splits text over 2,000 characters into several messages and returns the first id', async () => {
    const { fake, adapter, general } = await setup();
    const text = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' ');

    const { platformMessageId } = await adapter.send(keyOf(general), text);

    expect(text.length).toBeGreaterThan(4000);
    expect(fake.posted.length).toBe(3);
    expect(fake.posted[0]?.id).toBe(platformMessageId);
    for (const message of fake.posted) expect(message.content.length).toBeLessThanOrEqual(2000);
    expect(fake.posted.map((m) => m.content).join(' ')).toBe(text);
  });

  it('disallows @everyone and role pings in posts', async () => {
    const { fake, adapter, general } = await setup();

    await adapter.send(keyOf(general), '@everyone look');

    const post = fake.requests.find(
      (r) => r.method === 'POST' && r.route === `/channels/${general.id}/messages`,
    );
    expect(post?.body).toMatchObject({ allowed_mentions: { parse: ['users'] } });
  });

  it('rejects a send to an unknown channel or a malformed key with an EbbError', async () => {
    const { fake, adapter } = await setup();

    await expect(adapter.send(`discord:${fake.guild.id}:${fake.snowflake()}`, 'hi')).rejects.toMatchObject({
      name: 'DiscordError',
      code: 'discord_not_found',
      retryable: false,
    });
    await expect(adapter.send('slack:T1:C1', 'hi')).rejects.toMatchObject({ code: 'invalid_channel_key' });
    await expect(adapter.send(`discord:dm:${fake.snowflake()}`, '   ')).rejects.toMatchObject({
      code: 'empty_message',
    });
  });

  it('shows typing and never throws from typing', async () => {
    const { fake, adapter, thread } = await setup();

    await adapter.typing(keyOf(thread));
    await expect(adapter.typing(`discord:${fake.guild.id}:${fake.snowflake()}`)).resolves.toBeUndefined();
    await expect(adapter.typing('not a key')).resolves.toBeUndefined();

    expect(fake.typing).toEqual([thread.id]);
  });
});

describe('DiscordAdapter commands', () => {
  it('registers /context and /compact globally at start', async () => {
    const { fake } = await setup();

    expect(fake.commands().map((c) => c.name)).toEqual(['context', 'compact']);
    expect(fake.commands()[1]?.options).toEqual([
      expect.objectContaining({ name: 'focus', type: 3, required: false }),
    ]);
  });

  it('registers per guild when guilds are configured', async () => {
    const { fake } = await setup({ adapter: (f) => ({ guildIdsForCommands: [f.guild.id] }) });

    expect(fake.commands()).toEqual([]);
    expect(fake.commands(fake.guild.id).map((c) => c.name)).toEqual(['context', 'compact']);
  });

  it('answers /context ephemerally through the interaction callback', async () => {
    const { fake, commands, alice, general } = await setup();

    const interaction = fake.invokeCommand({ name: 'context', channel: general, user: alice });

    await vi.waitFor(() => expect(fake.interaction(interaction.id).replies).toHaveLength(1), eventually);
    expect(commands).toEqual([
      { platform: 'discord', name: 'context', channelKey: keyOf(general), userId: alice.id, args: '' },
    ]);
    expect(fake.interaction(interaction.id).replies).toEqual([
      { content: `context for ${keyOf(general)}`, ephemeral: true, via: 'callback' },
    ]);
  });

  it('passes the /compact focus as args, in threads and DMs', async () => {
    const { fake, commands, alice, thread } = await setup();
    const dm = fake.dm(alice);

    const inThread = fake.invokeCommand({
      name: 'compact',
      channel: thread,
      user: alice,
      options: { focus: '  the deploy plan ' },
    });
    const direct = fake.invokeCommand({ name: 'compact', channel: dm, user: alice });

    await vi.waitFor(() => {
      expect(fake.interaction(inThread.id).replies).toHaveLength(1);
      expect(fake.interaction(direct.id).replies).toHaveLength(1);
    }, eventually);
    expect(commands).toEqual([
      expect.objectContaining({ name: 'compact', channelKey: keyOf(thread), args: 'the deploy plan' }),
      expect.objectContaining({ name: 'compact', channelKey: `discord:dm:${dm.id}`, args: '' }),
    ]);
    expect(fake.interaction(direct.id).replies).toEqual([
      { content: `compact for discord:dm:${dm.id}`, ephemeral: true, via: 'callback' },
    ]);
  });

  it('defers a slow answer, then edits it in', async () => {
    let finish: (text: string) => void = () => {};
    const { fake, alice, general } = await setup({
      adapter: () => ({ deferAfterMs: 20 }),
      onCommand: () => new Promise<string>((resolve) => (finish = resolve)),
    });

    const interaction = fake.invokeCommand({ name: 'compact', channel: general, user: alice });

    await vi.waitFor(() => expect(fake.interaction(interaction.id).callbacks).toHaveLength(1), eventually);
    expect(fake.interaction(interaction.id).callbacks[0]).toEqual({ type: 5, data: { flags: 64 } });
    expect(fake.interaction(interaction.id).replies).toEqual([]);
    finish('compacted 40 messages');
    await vi.waitFor(() => expect(fake.interaction(interaction.id).replies).toHaveLength(1), eventually);
    expect(fake.interaction(interaction.id).replies).toEqual([
      { content: 'compacted 40 messages', ephemeral: true, via: 'edit' },
    ]);
  });

  it('answers with an apology when the handler fails, and logs the error', async () => {
    const { fake, logs, alice, general } = await setup({
      onCommand: () => Promise.reject(new Error('store down')),
    });

    const interaction = fake.invokeCommand({ name: 'context', channel: general, user: alice });

    await vi.waitFor(() => expect(fake.interaction(interaction.id).replies).toHaveLength(1), eventually);
    expect(fake.interaction(interaction.id).replies[0]?.content).toMatch(/^Sorry, that command failed/);
    expect(logs.filter((l) => l.level === 'error').map((l) => l.message)).toEqual(['discord command failed']);
  });
});

describe('DiscordAdapter connection', () => {
  it('resumes after a dropped connection and delivers missed and replayed messages once', async () => {
    const { fake, messages, logs, alice, general } = await setup();
    const before = fake.postMessage({ channel: general, author: alice, content: 'before' });
    await vi.waitFor(() => expect(messages).toHaveLength(1), eventually);

    // The next RESUME also replays `before`, which the client already handled.
    fake.dropConnection({ resendOnResume: 1 });
    expect(fake.connected).toBe(false);
    const missed1 = fake.postMessage({ channel: general, author: alice, content: 'while away 1' });
    const missed2 = fake.postMessage({ channel: general, author: alice, content: 'while away 2' });

    await vi.waitFor(
      () => expect(messages.map((m) => m.platformMessageId)).toContain(missed2.id),
      eventually,
    );
    const after = fake.postMessage({ channel: general, author: alice, content: 'after' });
    await vi.waitFor(() => expect(messages.map((m) => m.platformMessageId)).toContain(after.id), eventually);

    expect(messages.map((m) => m.platformMessageId)).toEqual([before.id, missed1.id, missed2.id, after.id]);
    expect(fake.identifyCount).toBe(1);
    expect(fake.resumeCount).toBe(1);
    expect(fake.connectionPaths).toEqual(['/gateway', '/resume']);
    expect(logs.map((l) => l.fields.event)).toContain('discord.resumed');
  });

  it('identifies again after a non-resumable INVALID_SESSION and keeps working', async () => {
    const { fake, adapter, messages, alice, general } = await setup();
    const firstSession = fake.sessionId;

    fake.invalidateSession();

    // discord.js waits out its 5 s identify window before identifying again.
    await vi.waitFor(
      () => {
        expect(fake.identifyCount).toBe(2);
        expect(fake.connected).toBe(true);
      },
      { timeout: 15_000 },
    );
    expect(fake.sessionId).not.toBe(firstSession);
    expect(fake.resumeCount).toBe(0);
    const later = fake.postMessage({ channel: general, author: alice, content: 'still there?' });
    await vi.waitFor(() => expect(messages.map((m) => m.platformMessageId)).toEqual([later.id]), eventually);
    await adapter.send(keyOf(general), 'yes');
    expect(fake.posted.map((m) => m.content)).toEqual(['yes']);
  });

  it('rejects start with discord_token_invalid for a wrong token, and never records or logs a token', async () => {
    const fake = await FakeDiscord.start();
    onTestFinished(() => fake.close());
    const logger = new RecordingLogger();
    const adapter = new DiscordAdapter({ token: 'not-the-token', restApi: fake.restApi, logger });

    await expect(
      adapter.start({ onMessage: async () => undefined, onCommand: async () => '' }),
    ).rejects.toMatchObject({ code: 'discord_token_invalid', retryable: false });
    expect(fake.requests.map((r) => [r.route, r.status, r.headers.authorization])).toEqual([
      ['/gateway/bot', 401, '[redacted]'],
    ]);
    expect(JSON.stringify(logger.entries)).not.toContain('not-the-token');
  });
});
