/**
 * The dashboard part: its pages and API over the stores, with the live feed (usage after each turn,
 * compaction events, context changes, finished take-backs) and BullMQ's board; the notifier
 * subscription that brings it the passes (and take-backs) of other processes is ended at stop.
 */
import type { ContextNotifier, ShutdownSteps } from '@ebb/core';
import type { Toolbox } from '@ebb/tools';
import { type BoardQueue, mountDashboard, type WebAdapter } from '@ebb/web';
import { StoreDashboardSource } from '../dashboard/dashboard-channels.js';
import type { DashboardFeed } from '../dashboard/dashboard-feed.js';
import { OfferedTools } from '../status/offered-tools.js';
import type { Stores } from './database.js';
import type { StartOptions } from './options.js';

export interface DashboardParts {
  readonly web: WebAdapter;
  readonly stores: Stores;
  readonly feed: DashboardFeed;
  readonly toolbox: Toolbox;
  readonly notifier: ContextNotifier;
  readonly board: BoardQueue | undefined;
}

export async function startDashboard(
  options: StartOptions,
  parts: DashboardParts,
  steps: ShutdownSteps,
): Promise<void> {
  const { web, feed } = parts;
  mountDashboard(web.app, {
    tokenRequired: options.env.EBB_ADMIN_TOKEN !== undefined,
    queue: parts.board,
    source: new StoreDashboardSource({
      config: options.config,
      ...parts.stores,
      takeBacks: parts.stores.channels.takeBacks,
      feed,
      offeredTools: new OfferedTools(parts.toolbox),
    }),
    closing: web.stopping,
  });
  // Passes a worker in another process splices reach the bot (and the dashboard) only this way.
  const unsubscribe = await parts.notifier.subscribe((change) => feed.onContextChanged(change));
  steps.add(unsubscribe);
}
