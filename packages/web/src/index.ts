// What the bot, its tests and the benchmarks use; the rest (sessions, the rate limiter, route classes)
// stays inside.
export { exposure } from './access.js';
export { type BoardQueue, mountDashboard } from './dashboard.js';
export * from './dashboard-api.js';
export { mountGuards } from './guards.js';
export { DEFAULT_RATE_LIMIT } from './rate-limit.js';
export { traceRequests } from './request-spans.js';
export { DEFAULT_WEB_ADAPTER, WebAdapter } from './web-adapter.js';
