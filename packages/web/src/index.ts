// What the bot and the benchmarks use; the rest (sessions, the rate limiter, route classes) stays inside.
export { exposure } from './access.js';
export { type BoardQueue, type DashboardChannel, mountDashboard } from './dashboard.js';
export { WebAdapter } from './web-adapter.js';
