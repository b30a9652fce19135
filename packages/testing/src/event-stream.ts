/**
 * A server-sent event stream read by a test: it reads only when asked (`until` a text arrives, or
 * the end), so a test waits for the event it expects instead of sleeping, and `events` parses what
 * came so far.
 */
export class EventStreamReader {
  #text = '';
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();

  constructor(response: Response) {
    if (!response.body) throw new Error(`no event stream: ${response.status}`);
    this.#reader = response.body.getReader();
  }

  /** Opens `url` with fetch and reads up to the server's `ready` event. */
  static async open(url: string, init?: RequestInit): Promise<EventStreamReader> {
    const stream = new EventStreamReader(await fetch(url, init));
    await stream.until('event: ready');
    return stream;
  }

  /** Everything read so far. */
  get text(): string {
    return this.#text;
  }

  /** Reads until `needle` has arrived; throws if the stream ends first. */
  async until(needle: string): Promise<void> {
    while (!this.#text.includes(needle)) {
      if (await this.#read()) throw new Error(`the event stream ended before ${needle}`);
    }
  }

  /** Reads until the server ends the stream. */
  async ended(): Promise<void> {
    while (!(await this.#read())) {}
  }

  /** The parsed `data` of every `event: <type>` read so far, in order. */
  events(type: string): Record<string, unknown>[] {
    return [...this.#text.matchAll(/^event: (.*)\ndata: (.*)$/gm)]
      .filter(([, event]) => event === type)
      .map(([, , data]) => JSON.parse(data ?? '') as Record<string, unknown>);
  }

  /** Lets go of the stream (the server sees the client leave). */
  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }

  /** One chunk; true when the stream has ended. */
  async #read(): Promise<boolean> {
    const { value, done } = await this.#reader.read();
    if (value) this.#text += this.#decoder.decode(value, { stream: true });
    return done;
  }
}
