export * from './errors.js';
export * from './extractive-summarizer.js';
export * from './offline-responder.js';
export * from './openai-chat-model.js';
export * from './openai-summarizer.js';
export * from './request-dialect.js';
export * from './retry.js';
export * from './tokenizer.js';
