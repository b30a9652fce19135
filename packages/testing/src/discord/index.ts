export * from './fake-discord.js';
export * from './fake-guild.js';
export type { RateLimitAnswer, RateLimitScope, RateLimitScript } from './rate-limits.js';
export type { ServerErrorAnswer, ServerErrorScript } from './server-errors.js';
export * from './snowflake.js';
export * from './wire.js';
