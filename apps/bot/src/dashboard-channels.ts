/**
 * The dashboard's channel list, from the stores: usage as the bot computes it (the same numbers as
 * `ebb status`), the three thresholds, tokens, spans and the last passes of every channel.
 */
import { type EbbConfig, resolveChannel } from '@ebb/config';
import type { PgChannelStore, PgRunStore } from '@ebb/db';
import type { DashboardChannel } from '@ebb/web';
import { compactorSettingsOf, describeChannel, RECENT_PASSES } from './commands/status.js';

export interface DashboardStores {
  readonly config: () => EbbConfig;
  readonly channels: PgChannelStore;
  readonly runs: PgRunStore;
}

export async function dashboardChannels(stores: DashboardStores): Promise<DashboardChannel[]> {
  const config = stores.config();
  const summaries = await stores.channels.listChannels();
  return Promise.all(
    summaries.map(async (summary) => {
      const settings = resolveChannel(config, summary.key);
      const [compactor, prefix, calibration, runs] = await Promise.all([
        compactorSettingsOf(settings),
        stores.channels.loadPrefix(summary.key),
        stores.channels.calibration(summary.key),
        stores.runs.recent(summary.key, RECENT_PASSES),
      ]);
      const status = describeChannel({
        summary,
        spans: prefix.spans,
        settings,
        compactor,
        calibration,
        runs,
        // The dashboard shows no memory counts: skip the scan.
        memories: { scope: '', count: 0 },
        prices: config.prices,
        settingRows: null,
      });
      return {
        key: status.key,
        usage: status.usage,
        thresholds: status.thresholds,
        tokens: status.tokens,
        spans: status.spans,
        passes: status.passes.map((p) => ({
          jobId: p.jobId,
          tier: p.tier,
          status: p.status,
          tokensBefore: p.tokensBefore,
          tokensAfter: p.tokensAfter,
          durationMs: p.durationMs,
          createdAt: p.createdAt,
        })),
      };
    }),
  );
}
