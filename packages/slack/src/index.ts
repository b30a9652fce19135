export * from './channel-key.js';
export * from './logger.js';
export * from './read-message.js';
export * from './slack-adapter.js';
export * from './slack-text.js';
