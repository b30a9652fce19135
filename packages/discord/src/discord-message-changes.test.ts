/**
 * Deletions and edits through the adapter, with the real discord.js client against FakeDiscord: the
 * MessageChange `onMessageChange` receives, under the id and key the message was delivered with, and
 * the updates that are no edit.
 */
import type { MessageChange } from '@ebb/core';
import type { FakeDiscord, WireChannel, WireMessage, WireUser } from '@ebb/testing/discord';
import { describe, expect, it, vi } from 'vitest';
import { setup } from '../test/discord-adapter-harness.js';
import { discordChannelKey } from './channel-key.js';

/** Gateway round trips (a resume waits 500 ms first) can be slow on a loaded machine. */
const eventually = { timeout: 10_000 } as const;
const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

function keyOf(channel: WireChannel): string {
  return discordChannelKey(channel.guild_id ?? null, channel.id, channel.parent_id ?? null);
}

describe('DiscordAdapter deletions', () => {
  it('reports a deleted message under the id and key it was delivered with, in channels, threads and DMs', async () => {
    const { fake, messages, changes, alice, general, thread } = await setup();
    const dm = fake.dm(alice);
    const posted = [
      fake.postMessage({ channel: general, author: alice, content: 'my password is hunter2' }),
      fake.postMessage({ channel: thread, author: alice, content: 'my address' }),
      fake.postMessage({ channel: dm, author: alice, content: 'my phone' }),
    ];
    await vi.waitFor(() => expect(messages).toHaveLength(3), eventually);

    for (const message of posted) fake.deleteMessage(message);

    await vi.waitFor(() => expect(changes).toHaveLength(3), eventually);
    expect(changes).toEqual(
      messages.map((m) => ({
        kind: 'deleted',
        platform: 'discord',
        channelKey: m.channelKey,
        platformMessageIds: [m.platformMessageId],
        ts: iso,
      })),
    );
    expect(changes.map((c) => c.channelKey)).toEqual([keyOf(general), keyOf(thread), `discord:dm:${dm.id}`]);
  });

  it("reports a moderator's bulk deletion as one change, and the deletion of its own reply", async () => {
    const { fake, adapter, changes, alice, thread } = await setup();
    const first = fake.postMessage({ channel: thread, author: alice, content: 'one' });
    const second = fake.postMessage({ channel: thread, author: alice, content: 'two' });
    const reply = await adapter.send(keyOf(thread), 'an answer that repeats one');

    fake.bulkDelete(thread, [first, second]);
    fake.deleteMessage({ id: reply.platformMessageId, channel_id: thread.id, guild_id: fake.guild.id });

    await vi.waitFor(() => expect(changes).toHaveLength(2), eventually);
    expect(changes).toEqual([
      expect.objectContaining({
        kind: 'deleted',
        channelKey: keyOf(thread),
        platformMessageIds: [first.id, second.id],
      }),
      expect.objectContaining({ kind: 'deleted', platformMessageIds: [reply.platformMessageId] }),
    ]);
  });

  it('reports a deletion and an edit in a DM the client has not seen since it started, once', async () => {
    const { fake, changes, logs, alice, general } = await setup();
    // A DM from before a restart: the client never saw the channel, and MESSAGE_DELETE cannot name its type.
    const dm = fake.dm(alice);
    const old = fake.messageFromBefore({ channel: dm, author: alice, content: 'my card number' });
    const other = fake.messageFromBefore({ channel: dm, author: alice, content: 'my pin' });

    fake.deleteMessage(old);
    const edited = fake.editMessage(other, 'not my pin');
    const marker = fake.postMessage({ channel: general, author: alice, content: 'marker' });
    fake.deleteMessage(marker);

    await vi.waitFor(() => expect(changes.map((c) => c.channelKey)).toContain(keyOf(general)), eventually);
    expect(changes).toEqual([
      expect.objectContaining({
        kind: 'deleted',
        channelKey: `discord:dm:${dm.id}`,
        platformMessageIds: [old.id],
      }),
      expect.objectContaining({
        kind: 'edited',
        channelKey: `discord:dm:${dm.id}`,
        platformMessageId: other.id,
        text: 'not my pin',
        ts: edited.edited_timestamp,
      }),
      expect.objectContaining({ kind: 'deleted', platformMessageIds: [marker.id] }),
    ]);
    expect(logs.filter((l) => l.fields.event === 'discord.message_change_failed')).toEqual([]);
  });
});

describe('DiscordAdapter edits', () => {
  it('reports an edit with its new text, mentions of the bot rewritten, at the time of the edit', async () => {
    const { fake, messages, changes, alice, thread } = await setup();
    const original = fake.postMessage({ channel: thread, author: alice, content: 'deploy at 5' });
    await vi.waitFor(() => expect(messages).toHaveLength(1), eventually);

    const edited = fake.editMessage(original, `<@${fake.bot.id}> deploy at 6`);

    await vi.waitFor(() => expect(changes).toHaveLength(1), eventually);
    expect(changes[0]).toEqual({
      kind: 'edited',
      platform: 'discord',
      channelKey: messages[0]?.channelKey,
      platformMessageId: messages[0]?.platformMessageId,
      text: '@ebb deploy at 6',
      ts: edited.edited_timestamp,
    });
  });

  it('ignores updates that are no edit: an unfurl, one without content, and its own messages', async () => {
    const { fake, adapter, changes, logs, alice, general } = await setup();
    const link = fake.postMessage({ channel: general, author: alice, content: 'see https://example.com/' });
    const reply = await adapter.send(keyOf(general), 'an answer');
    const own = fake.posted.find((m) => m.id === reply.platformMessageId);
    if (!own) throw new Error('the reply was not posted');

    fake.unfurl(link);
    // Older gateways sent an embed update without content.
    fake.dispatch('MESSAGE_UPDATE', {
      id: link.id,
      channel_id: general.id,
      guild_id: fake.guild.id,
      embeds: [],
    });
    fake.editMessage(own, 'an answer, reworded');
    const edited = fake.editMessage(link, 'see https://example.org/');

    await vi.waitFor(() => expect(changes).toHaveLength(1), eventually);
    expect(changes[0]).toMatchObject({ kind: 'edited', platformMessageId: edited.id, text: edited.content });
    const ignored = logs.filter((l) => l.fields.event === 'discord.message_change_ignored');
    expect(ignored.map((l) => [l.fields.reason, l.fields.messageId])).toEqual([
      ['unchanged', link.id],
      ['unchanged', link.id],
      ['own_message', own.id],
    ]);
  });

  it('reports each deletion and edit once when a resumed session replays them', async () => {
    const { fake, changes, logs, alice, general } = await setup();
    const message = fake.postMessage({ channel: general, author: alice, content: 'v1' });
    fake.editMessage(message, 'v2');
    fake.deleteMessage(message);
    await vi.waitFor(() => expect(changes).toHaveLength(2), eventually);

    // The RESUME replays the edit and the deletion the client already handled.
    fake.dropConnection({ resendOnResume: 2 });
    const after = fake.postMessage({ channel: general, author: alice, content: 'after' });
    fake.deleteMessage(after);

    await vi.waitFor(() => expect(changes).toHaveLength(3), eventually);
    expect(changes.map((c) => c.kind)).toEqual(['edited', 'deleted', 'deleted']);
    const duplicates = logs.filter(
      (l) => l.fields.event === 'discord.message_change_ignored' && l.fields.reason === 'duplicate',
    );
    expect(duplicates.map((l) => l.fields.messageId)).toEqual([message.id, message.id]);
  });

  it('logs a change the handler failed to apply', async () => {
    const { fake, changes, logs, alice, general } = await setup({
      onMessageChange: async () => {
        throw new Error('store down');
      },
    });
    const message = fake.postMessage({ channel: general, author: alice, content: 'x' });

    fake.deleteMessage(message);

    await vi.waitFor(
      () => expect(logs.filter((l) => l.fields.event === 'discord.message_change_failed')).toHaveLength(1),
      eventually,
    );
    expect(changes).toHaveLength(1);
    expect(logs.find((l) => l.fields.event === 'discord.message_change_failed')?.fields).toMatchObject({
      channel: keyOf(general),
      kind: 'deleted',
    });
  });
});

describe('DiscordAdapter changes in a thread the client has not heard of', () => {
  /** Each change as [key, kind, ids]. */
  const summary = (list: readonly MessageChange[]) =>
    list.map((c) => [
      c.channelKey,
      c.kind,
      c.kind === 'deleted' ? c.platformMessageIds : [c.platformMessageId],
    ]);

  it("reports deletions, a bulk deletion and an edit in an archived thread under the thread's key, once", async () => {
    const { fake, changes, logs, alice, general, thread } = await setup();
    // Archived before the client connected: no GUILD_CREATE named it.
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const [one, two, three, four] = ['my address', 'my phone', 'my pin', 'deploy at 5'].map((content) =>
      fake.messageFromBefore({ channel: archived, author: alice, content }),
    ) as [WireMessage, WireMessage, WireMessage, WireMessage];
    const known = fake.postMessage({ channel: thread, author: alice, content: 'in a thread it knows' });

    fake.deleteMessage(one);
    fake.bulkDelete(archived, [two, three]);
    const edited = fake.editMessage(four, 'deploy at 6');
    fake.deleteMessage(known);

    await vi.waitFor(() => expect(changes).toHaveLength(4), eventually);
    // A RESUME replays all four; then one more deletion, to see that the replays were handled.
    fake.dropConnection({ resendOnResume: 4 });
    const marker = fake.postMessage({ channel: general, author: alice, content: 'marker' });
    fake.deleteMessage(marker);
    await vi.waitFor(() => expect(changes).toHaveLength(5), eventually);

    const archivedKey = discordChannelKey(fake.guild.id, archived.id, general.id);
    expect(summary(changes.filter((c) => c.channelKey === archivedKey))).toEqual([
      [archivedKey, 'deleted', [one.id]],
      [archivedKey, 'deleted', [two.id, three.id]],
      [archivedKey, 'edited', [four.id]],
    ]);
    expect(changes.find((c) => c.kind === 'edited')).toMatchObject({
      text: 'deploy at 6',
      ts: edited.edited_timestamp,
    });
    expect(summary(changes.filter((c) => c.channelKey !== archivedKey))).toEqual([
      [keyOf(thread), 'deleted', [known.id]],
      [keyOf(general), 'deleted', [marker.id]],
    ]);
    // Discord was asked once, for the thread the client did not know.
    const lookups = fake.requests.filter((r) => r.method === 'GET' && r.route.startsWith('/channels/'));
    expect(lookups.map((r) => r.route)).toEqual([`/channels/${archived.id}`]);
    const duplicates = logs.filter(
      (l) => l.fields.event === 'discord.message_change_ignored' && l.fields.reason === 'duplicate',
    );
    expect(duplicates.map((l) => l.fields.messageId)).toEqual([one.id, two.id, four.id, known.id]);
  });

  it('drops a change in a channel Discord will not show, logged at warn with why: gone (404), no access (403)', async () => {
    const { fake, changes, logs, alice, general } = await setup();
    const gone = { id: fake.snowflake(), channel_id: fake.snowflake(), guild_id: fake.guild.id };
    const hidden = fake.addThread(fake.guild, { name: 'hidden', parent: general, archived: true });
    fake.denyAccess(hidden);
    const secret = fake.messageFromBefore({ channel: hidden, author: alice, content: 'my pin' });

    fake.deleteMessage(gone);
    fake.editMessage(secret, 'not my pin');

    const dropped = () => logs.filter((l) => l.fields.event === 'discord.message_change_dropped');
    await vi.waitFor(() => expect(dropped()).toHaveLength(2), eventually);
    const marker = fake.postMessage({ channel: general, author: alice, content: 'marker' });
    fake.deleteMessage(marker);
    await vi.waitFor(() => expect(changes).toHaveLength(1), eventually);
    expect(summary(changes)).toEqual([[keyOf(general), 'deleted', [marker.id]]]);
    expect(dropped().map((l) => ({ level: l.level, ...l.fields, err: undefined }))).toEqual([
      {
        level: 'warn',
        event: 'discord.message_change_dropped',
        reason: 'discord_not_found',
        err: undefined,
        tries: 1,
        guildId: fake.guild.id,
        channelId: gone.channel_id,
        kind: 'deleted',
        messageIds: [gone.id],
      },
      {
        level: 'warn',
        event: 'discord.message_change_dropped',
        reason: 'discord_forbidden',
        err: undefined,
        tries: 1,
        guildId: fake.guild.id,
        channelId: hidden.id,
        kind: 'edited',
        messageIds: [secret.id],
      },
    ]);
    // Refusals are final: one GET each, no second try.
    expect(channelGets(fake)).toEqual([`/channels/${gone.channel_id}`, `/channels/${hidden.id}`]);
  });

  it('asks again while Discord fails (5xx) and reports the change once, in order with a change that came meanwhile', async () => {
    const { fake, changes, logs, alice, general, sleeps, open } = await setupGated();
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const [one, two] = ['my address', 'deploy at 5'].map((content) =>
      fake.messageFromBefore({ channel: archived, author: alice, content }),
    ) as [WireMessage, WireMessage];
    // Two tries fail: discord.js sends a GET that met a 5xx 3 more times before it throws.
    fake.serverError({ method: 'GET', route: `channels/${archived.id}`, times: 2 * 4, status: 502 });

    fake.deleteMessage(one);
    await vi.waitFor(() => expect(sleeps).toHaveLength(1), eventually);
    // While the lookup waits to try again, an edit in the thread: it joins the lookup.
    fake.editMessage(two, 'deploy at 6');
    await markerReported(fake, changes, alice, general);
    open();

    await vi.waitFor(() => expect(changes).toHaveLength(3), eventually);
    const archivedKey = discordChannelKey(fake.guild.id, archived.id, general.id);
    expect(summary(changes.slice(1))).toEqual([
      [archivedKey, 'deleted', [one.id]],
      [archivedKey, 'edited', [two.id]],
    ]);
    // One lookup for both: two tries of 4 GETs failed, the third try's GET answered.
    expect(statuses(fake, archived.id)).toEqual([...Array(8).fill(502), 200]);
    expect(sleeps).toHaveLength(2);
    expect(logs.filter((l) => l.fields.event === 'discord.message_change_dropped')).toEqual([]);
  });

  it('keeps a change discord.js reports in a thread it learnt of while the lookup waited behind the ones before it', async () => {
    const { fake, messages, changes, alice, general, sleeps, open } = await setupGated();
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const old = fake.messageFromBefore({ channel: archived, author: alice, content: 'my address' });
    fake.serverError({ method: 'GET', route: `channels/${archived.id}`, times: 4, status: 502 });

    fake.deleteMessage(old);
    await vi.waitFor(() => expect(sleeps).toHaveLength(1), eventually);
    // A post unarchives the thread (THREAD_UPDATE: discord.js knows it from now on), then is deleted:
    // discord.js reports that deletion itself.
    const posted = fake.postMessage({ channel: archived, author: alice, content: 'my pin' });
    fake.deleteMessage(posted);
    await markerReported(fake, changes, alice, general);
    open();

    await vi.waitFor(() => expect(changes).toHaveLength(3), eventually);
    const archivedKey = discordChannelKey(fake.guild.id, archived.id, general.id);
    expect(messages.find((m) => m.platformMessageId === posted.id)?.channelKey).toBe(archivedKey);
    expect(summary(changes.slice(1))).toEqual([
      [archivedKey, 'deleted', [old.id]],
      [archivedKey, 'deleted', [posted.id]],
    ]);
    // The second try found the thread in discord.js's cache, where the THREAD_UPDATE put it.
    expect(statuses(fake, archived.id)).toEqual([502, 502, 502, 502]);
  });

  it('drops a change whose lookup fails on every try, logged with the last reason and the tries', async () => {
    const sleeps: number[] = [];
    const { fake, changes, logs, alice, general } = await setup({
      adapter: () => ({ channelLookupRetry: { tries: 4, sleep: async (ms) => void sleeps.push(ms) } }),
    });
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const old = fake.messageFromBefore({ channel: archived, author: alice, content: 'my address' });
    // 3 tries meet 500s, the last one 503s (4 GETs a try).
    fake.serverError({ method: 'GET', route: `channels/${archived.id}`, times: 3 * 4, status: 500 });
    fake.serverError({ method: 'GET', route: `channels/${archived.id}`, times: 4, status: 503 });

    fake.deleteMessage(old);

    const dropped = () => logs.filter((l) => l.fields.event === 'discord.message_change_dropped');
    await vi.waitFor(() => expect(dropped()).toHaveLength(1), eventually);
    expect(dropped()[0]).toMatchObject({
      level: 'warn',
      fields: {
        reason: 'discord_http_error',
        err: expect.objectContaining({ message: expect.stringMatching(/Discord answered 503/) }),
        tries: 4,
        channelId: archived.id,
        kind: 'deleted',
        messageIds: [old.id],
      },
    });
    expect(sleeps).toHaveLength(3);
    expect(channelGets(fake)).toHaveLength(16);
    expect(changes).toEqual([]);
  });

  it('drops a change whose lookup waits to try again when the adapter stops', async () => {
    let waiting = 0;
    const { fake, adapter, logs, alice, general } = await setup({
      adapter: () => ({
        channelLookupRetry: {
          sleep: (_ms, signal) =>
            new Promise<void>((resolve) => {
              waiting++;
              signal.addEventListener('abort', () => resolve(), { once: true });
            }),
        },
      }),
    });
    const archived = fake.addThread(fake.guild, { name: 'old-plan', parent: general, archived: true });
    const old = fake.messageFromBefore({ channel: archived, author: alice, content: 'my address' });
    fake.serverError({ method: 'GET', route: `channels/${archived.id}`, times: Infinity });

    fake.deleteMessage(old);
    await vi.waitFor(() => expect(waiting).toBe(1), eventually);
    await adapter.stop();

    const dropped = () => logs.filter((l) => l.fields.event === 'discord.message_change_dropped');
    await vi.waitFor(() => expect(dropped()).toHaveLength(1), eventually);
    expect(dropped()[0]?.fields).toMatchObject({ reason: 'discord_http_error', tries: 1 });
    expect(channelGets(fake)).toHaveLength(4);
  });
});

/**
 * The harness with the lookup's first wait lasting until the test calls `open`; the later waits do
 * not wait. `sleeps` has the delay of each wait.
 */
async function setupGated() {
  const sleeps: number[] = [];
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const harness = await setup({
    adapter: () => ({
      channelLookupRetry: {
        sleep: (ms) => {
          sleeps.push(ms);
          return gate;
        },
      },
    }),
  });
  return { ...harness, sleeps, open };
}

/**
 * Deletes a message in a channel the client knows and waits until it is the only change reported: the
 * client has then read every dispatch before it, and none of them was reported.
 */
async function markerReported(
  fake: FakeDiscord,
  changes: readonly MessageChange[],
  author: WireUser,
  channel: WireChannel,
): Promise<void> {
  const marker = fake.postMessage({ channel, author, content: 'marker' });
  fake.deleteMessage(marker);
  await vi.waitFor(() => expect(changes).toHaveLength(1), eventually);
  expect(changes).toEqual([expect.objectContaining({ kind: 'deleted', platformMessageIds: [marker.id] })]);
}

/** The statuses FakeDiscord answered `GET /channels/{id}` with, oldest first. */
function statuses(fake: FakeDiscord, channelId: string): number[] {
  return fake.requests
    .filter((r) => r.method === 'GET' && r.route === `/channels/${channelId}`)
    .map((r) => r.status);
}

/** The routes of the `GET /channels/{id}` requests FakeDiscord received, oldest first. */
function channelGets(fake: FakeDiscord): string[] {
  return fake.requests
    .filter((r) => r.method === 'GET' && /^\/channels\/\d+$/.test(r.route))
    .map((r) => r.route);
}
