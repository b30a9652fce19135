export * from './worker-process.js';
