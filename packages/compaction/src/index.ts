export * from './channel-pass-settings.js';
export * from './compaction-processor.js';
export * from './embedded-pipeline.js';
export * from './postgres-pipeline.js';
export * from './redact-channel.js';
export * from './run-worker.js';
export * from './take-back-copies.js';
export * from './take-back-runner.js';
