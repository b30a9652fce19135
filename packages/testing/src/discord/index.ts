export * from './fake-discord.js';
export * from './snowflake.js';
export * from './wire.js';
