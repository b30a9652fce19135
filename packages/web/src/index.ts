export * from './access.js';
export * from './dashboard.js';
export * from './errors.js';
export * from './rate-limit.js';
export * from './web-adapter.js';
