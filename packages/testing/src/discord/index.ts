export * from './fake-discord.js';
export * from './fake-guild.js';
export type { RateLimitAnswer, RateLimitScope, RateLimitScript } from './rate-limits.js';
export * from './snowflake.js';
export * from './wire.js';
