export * from './dashboard.js';
export * from './web-adapter.js';
