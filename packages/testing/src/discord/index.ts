export * from './fake-discord.js';
export type { RateLimitAnswer, RateLimitScope, RateLimitScript } from './rate-limits.js';
export * from './snowflake.js';
export * from './wire.js';
