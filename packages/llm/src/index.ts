export * from './errors.js';
export * from './extractive-summarizer.js';
export * from './openai-summarizer.js';
export * from './retry.js';
export * from './tokenizer.js';
