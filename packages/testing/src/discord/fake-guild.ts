/** A guild of FakeDiscord: its text channels and active public threads, as the gateway announces them. */
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

  get threads(): readonly WireChannel[] {
    return this.#threads;
  }

  /** The text channel or thread called `name`. */
  channel(name: string): WireChannel {
    const found = [...this.#channels, ...this.#threads].find((c) => c.name === name);
    if (!found) throw new Error(`FakeDiscord: guild ${this.name} has no channel or thread named ${name}`);
    return found;
  }

  /** @internal */
  add(channel: WireChannel): void {
    (channel.type === ChannelType.PublicThread ? this.#threads : this.#channels).push(channel);
  }
}
