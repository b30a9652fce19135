export * from './health.js';
export type { MessageChangeSample } from './message-change-metrics.js';
export * from './metered-models.js';
export * from './metrics.js';
export * from './queue-stats.js';
export * from './routes.js';
export * from './serve-observability.js';
export { EBB_VERSION } from './version.js';
