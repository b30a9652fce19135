/**
 * A background job run at once and then every `intervalMs`, one run at a time (a tick while one is
 * in hand is skipped), on an unref'd timer so it never holds the process up; a failed run is
 * reported to `onError` and the next tick tries again. The take-back runner's sweep and retention's
 * sweep both run on it.
 */
export class Periodic {
  readonly #run: () => Promise<unknown>;
  readonly #intervalMs: number;
  readonly #onError: (err: unknown) => void;
  #timer: NodeJS.Timeout | undefined;
  #inHand: Promise<void> | undefined;

  constructor(run: () => Promise<unknown>, options: { intervalMs: number; onError: (err: unknown) => void }) {
    this.#run = run;
    this.#intervalMs = options.intervalMs;
    this.#onError = options.onError;
  }

  start(): void {
    if (this.#timer) return;
    this.#tick();
    this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
    this.#timer.unref();
  }

  /** No run starts from now on; resolves once the one in hand (if any) is done. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#inHand;
  }

  /** The run in hand, if any. */
  get inHand(): Promise<void> | undefined {
    return this.#inHand;
  }

  #tick(): void {
    this.#inHand ??= this.#run()
      .then(
        () => {},
        (err: unknown) => this.#onError(err),
      )
      .finally(() => {
        this.#inHand = undefined;
      });
  }
}
