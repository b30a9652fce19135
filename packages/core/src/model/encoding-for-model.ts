/** The tokenizer encodings Ebb can count with (gpt-tokenizer's names). */
export const TOKENIZER_ENCODINGS = ['o200k_base', 'cl100k_base', 'p50k_base', 'r50k_base'] as const;
export type TokenizerEncoding = (typeof TOKENIZER_ENCODINGS)[number];

/** Model-name prefixes and their tokenizer, first match wins (so `gpt-4o` is tested before `gpt-4`). */
const ENCODING_BY_PREFIX: readonly (readonly [prefix: string, encoding: TokenizerEncoding])[] = [
  ['gpt-4o', 'o200k_base'],
  ['gpt-4.1', 'o200k_base'],
  ['gpt-5', 'o200k_base'],
  ['o1', 'o200k_base'],
  ['o3', 'o200k_base'],
  ['o4', 'o200k_base'],
  ['gpt-4', 'cl100k_base'],
  ['gpt-3.5', 'cl100k_base'],
];

/** The tokenizer `[llm] encoding` defaults to: known OpenAI families by prefix, `o200k_base` otherwise. */
export function encodingForModel(model: string): TokenizerEncoding {
  const name = model.toLowerCase();
  return ENCODING_BY_PREFIX.find(([prefix]) => name.startsWith(prefix))?.[1] ?? 'o200k_base';
}
