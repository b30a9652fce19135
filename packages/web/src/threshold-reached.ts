import type { DashboardReached, DashboardThresholds } from './dashboard-api.js';

/**
 * The highest threshold `usage` has reached. The server sets a row's `reached` with it, and the
 * page imports it for the rows a turn event moves (the event carries usage only), so the two agree.
 */
export function thresholdReached(usage: number, thresholds: DashboardThresholds): DashboardReached {
  if (usage >= thresholds.emergency) return 'emergency';
  if (usage >= thresholds.aggressive) return 'aggressive';
  if (usage >= thresholds.background) return 'background';
  return 'none';
}
