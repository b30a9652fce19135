export * from './web-adapter.js';
