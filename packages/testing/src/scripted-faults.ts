/**
 * The scripted faults the fake servers share: a test scripts a fault for the next `times` requests
 * that match it; a request is answered by the oldest script that matches, which is used up once and
 * dropped at zero. Each fake supplies the match and its own wire-format answer (FakeSlack's
 * `{ ok: false }` and 429s, FakeDiscord's 429s, FakeOpenAiServer's faults).
 */

export interface FaultScript<Request, Answer> {
  /** Whether the script answers this request. */
  readonly matches: (request: Request) => boolean;
  /** What the fake sends instead of handling the request. */
  readonly answer: (request: Request) => Answer;
  /** How many matching requests it answers, at least 1; `Infinity` for every one from now on. */
  readonly times: number;
}

interface Scripted<Request, Answer> {
  readonly script: FaultScript<Request, Answer>;
  remaining: number;
}

export class ScriptedFaults<Request, Answer> {
  /** The fake's name, for its errors (`FakeSlack`). */
  readonly #owner: string;
  #scripted: Scripted<Request, Answer>[] = [];

  constructor(owner: string) {
    this.#owner = owner;
  }

  add(script: FaultScript<Request, Answer>): void {
    if (!(script.times >= 1))
      throw new Error(`${this.#owner}: a fault needs times >= 1, got ${script.times}`);
    this.#scripted.push({ script, remaining: script.times });
  }

  /** The answer of the oldest script matching `request`, used up once; undefined when none matches. */
  take(request: Request): Answer | undefined {
    const scripted = this.#scripted.find((s) => s.script.matches(request));
    if (!scripted) return undefined;
    scripted.remaining--;
    if (scripted.remaining <= 0) this.#scripted = this.#scripted.filter((s) => s !== scripted);
    return scripted.script.answer(request);
  }

  /** Forgets every script. */
  clear(): void {
    this.#scripted = [];
  }
}
