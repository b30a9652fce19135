/**
 * A guild of FakeDiscord: its text channels and its threads. The gateway announces the text channels
 * and the active threads (`threads`); an archived thread (`archivedThreads`) is announced to no one,
 * as on Discord, and is found only by its id (`GET /channels/{id}`).
 */
import { ChannelType, type WireChannel } from './wire.js';

export class FakeGuild {
  readonly id: string;
  readonly name: string;
  readonly #channels: WireChannel[] = [];
  readonly #threads: WireChannel[] = [];

  /** @internal */
  constructor(id: string, name: string) {
    this.id = id;
    this.name = name;
  }

  get channels(): readonly WireChannel[] {
    return this.#channels;
  }

  /** The active threads: what GUILD_CREATE carries. */
  get threads(): readonly WireChannel[] {
    return this.#threads.filter((t) => t.thread_metadata?.archived !== true);
  }

  /** The archived threads: in no GUILD_CREATE. */
  get archivedThreads(): readonly WireChannel[] {
    return this.#threads.filter((t) => t.thread_metadata?.archived === true);
  }

  /** The text channel or thread (active or archived) called `name`. */
  channel(name: string): WireChannel {
    const found = [...this.#channels, ...this.#threads].find((c) => c.name === name);
    if (!found) throw new Error(`FakeDiscord: guild ${this.name} has no channel or thread named ${name}`);
    return found;
  }

  /** The text channel or thread (active or archived) with this id. */
  byId(id: string): WireChannel | undefined {
    return [...this.#channels, ...this.#threads].find((c) => c.id === id);
  }

  /** @internal */
  add(channel: WireChannel): void {
    (isThread(channel) ? this.#threads : this.#channels).push(channel);
  }

  /** @internal Puts `channel` in place of the one with its id (a thread archived or unarchived). */
  replace(channel: WireChannel): void {
    const list = isThread(channel) ? this.#threads : this.#channels;
    const index = list.findIndex((c) => c.id === channel.id);
    if (index === -1) throw new Error(`FakeDiscord: guild ${this.name} has no channel ${channel.id}`);
    list[index] = channel;
  }
}

function isThread(channel: WireChannel): boolean {
  return channel.type === ChannelType.PublicThread || channel.type === ChannelType.PrivateThread;
}
