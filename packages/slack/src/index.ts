export * from './channel-key.js';
export * from './read-message.js';
export * from './slack-adapter.js';
export { SLACK_ERROR_CODES, SlackError, type SlackErrorCode } from './slack-error.js';
export * from './slack-text.js';
