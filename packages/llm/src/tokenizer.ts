/**
 * The model's real tokenizer (gpt-tokenizer), one instance per encoding, loaded on first use so a
 * process only pays for the encodings its channels use. Special-token strings in chat text
 * ("<|endoftext|>") are counted as plain text, never rejected.
 */
import type { Tokenizer, TokenizerEncoding } from '@ebb/core';

interface EncodingModule {
  encode(text: string, options?: { disallowedSpecial?: Set<string> }): number[];
  decode(tokens: Iterable<number>): string;
  countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number;
}

const loaders: Record<TokenizerEncoding, () => Promise<EncodingModule>> = {
  o200k_base: () => import('gpt-tokenizer/encoding/o200k_base'),
  cl100k_base: () => import('gpt-tokenizer/encoding/cl100k_base'),
  p50k_base: () => import('gpt-tokenizer/encoding/p50k_base'),
  r50k_base: () => import('gpt-tokenizer/encoding/r50k_base'),
};

/** Treat special tokens as text: chat users can type them. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

const cache = new Map<TokenizerEncoding, Promise<Tokenizer>>();

export function loadTokenizer(encoding: TokenizerEncoding): Promise<Tokenizer> {
  let tokenizer = cache.get(encoding);
  if (!tokenizer) {
    tokenizer = loaders[encoding]().then((m) => gptTokenizer(encoding, m));
    cache.set(encoding, tokenizer);
  }
  return tokenizer;
}

function gptTokenizer(encoding: TokenizerEncoding, m: EncodingModule): Tokenizer {
  return {
    encoding,
    count: (text) => m.countTokens(text, AS_TEXT),
    encode: (text) => m.encode(text, AS_TEXT),
    decode: (tokens) => m.decode(tokens),
  };
}
