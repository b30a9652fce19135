export * from './fake-openai-server.js';
export { OPENAI_PROMPT_CACHE, PromptCache } from './prompt-cache.js';
export { promptTokens } from './wire.js';
