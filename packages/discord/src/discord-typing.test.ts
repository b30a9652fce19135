/**
 * Typing while the model runs, through the real discord.js against FakeDiscord: Discord shows the
 * indicator ~10 s, so the adapter sends it again until the reply is posted (refreshes shortened here).
 * "No more refreshes" is never asserted after a sleep: another channel's indicator is watched until
 * it has been refreshed several times, which proves the time passed.
 */
import type { WireChannel } from '@ebb/testing/discord';
import { describe, expect, it, vi } from 'vitest';
import { setup } from '../test/discord-adapter-harness.js';
import { discordChannelKey } from './channel-key.js';

/** Loaded machines run intervals late; the waits are for events, so a long bound costs nothing. */
const patient = { timeout: 5_000, interval: 5 } as const;

const keyOf = (channel: WireChannel) =>
  discordChannelKey(channel.guild_id ?? null, channel.id, channel.parent_id ?? null);

describe('DiscordAdapter typing', () => {
  it('keeps the indicator up until the reply is posted, then stops refreshing it', async () => {
    const { fake, adapter, general, thread } = await setup({ adapter: () => ({ typingRefreshMs: 20 }) });
    const typed = (channel: WireChannel) => fake.typing.filter((id) => id === channel.id).length;

    await adapter.typing(keyOf(thread));
    await adapter.typing(keyOf(thread)); // the bot calls it before each model call: no extra request
    await vi.waitFor(() => expect(typed(thread)).toBeGreaterThanOrEqual(4), patient);
    await adapter.send(keyOf(thread), 'the answer');
    const atReply = typed(thread);

    await adapter.typing(keyOf(general));
    await vi.waitFor(() => expect(typed(general)).toBeGreaterThanOrEqual(4), patient);
    // A refresh already on the wire when the reply went out may land; none starts after it.
    expect(typed(thread)).toBeLessThanOrEqual(atReply + 1);
    expect(fake.posted.map((m) => m.content)).toEqual(['the answer']);
  });

  it('stops on its own when no reply comes within typingMaxMs', async () => {
    const { fake, adapter, general, thread, logs } = await setup({
      adapter: () => ({ typingRefreshMs: 20, typingMaxMs: 60 }),
    });
    const typed = (channel: WireChannel) => fake.typing.filter((id) => id === channel.id).length;

    await adapter.typing(keyOf(thread));
    await vi.waitFor(
      () =>
        expect(logs.find((e) => e.fields.event === 'discord.typing_stopped')?.fields).toMatchObject({
          channel: keyOf(thread),
          reason: 'expired',
        }),
      patient,
    );
    const atExpiry = typed(thread);
    expect(atExpiry).toBeGreaterThanOrEqual(1);

    await adapter.typing(keyOf(general));
    await vi.waitFor(() => expect(typed(general)).toBeGreaterThanOrEqual(3), patient);
    expect(typed(thread)).toBeLessThanOrEqual(atExpiry + 1);
  });
});
