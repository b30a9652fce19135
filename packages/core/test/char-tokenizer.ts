/**
 * A reversible stand-in tokenizer for core tests: one token per 4 characters. The core only needs
 * a `Tokenizer`; the real one (gpt-tokenizer) lives in `@ebb/llm` and the core must not depend on it.
 */
import type { Tokenizer } from '../src/model/tokens.js';

export class CharTokenizer implements Tokenizer {
  readonly encoding = 'chars/4';
  readonly #ids = new Map<string, number>();
  readonly #pieces: string[] = [];

  count(text: string): number {
    return Math.ceil(text.length / 4);
  }

  encode(text: string): number[] {
    const out: number[] = [];
    for (let i = 0; i < text.length; i += 4) {
      const piece = text.slice(i, i + 4);
      let id = this.#ids.get(piece);
      if (id === undefined) {
        id = this.#pieces.push(piece) - 1;
        this.#ids.set(piece, id);
      }
      out.push(id);
    }
    return out;
  }

  decode(tokens: readonly number[]): string {
    return tokens.map((t) => this.#pieces[t] ?? '').join('');
  }
}
