/**
 * The dashboard's channel list, from the stores: usage as the bot computes it (the same numbers as
 * `ebb status`), the three thresholds, tokens, spans, the last passes and the most important
 * memories of every channel.
 */
import { type EbbConfig, resolveChannel } from '@ebb/config';
import { memoryScope } from '@ebb/core';
import type { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import type { DashboardChannel } from '@ebb/web';
import { compactorSettingsOf, describeChannel, RECENT_PASSES } from './commands/status.js';

export interface DashboardStores {
  readonly config: () => EbbConfig;
  readonly channels: PgChannelStore;
  readonly runs: PgRunStore;
  readonly memories: PgMemoryStore;
}

/** Memories shown per channel: the most important first. */
const MEMORIES_SHOWN = 10;

export async function dashboardChannels(stores: DashboardStores): Promise<DashboardChannel[]> {
  const config = stores.config();
  const summaries = await stores.channels.listChannels();
  return Promise.all(
    summaries.map(async (summary) => {
      const settings = resolveChannel(config, summary.key);
      const [compactor, prefix, calibration, runs, memories] = await Promise.all([
        compactorSettingsOf(settings),
        stores.channels.loadPrefix(summary.key),
        stores.channels.calibration(summary.key),
        stores.runs.recent(summary.key, RECENT_PASSES),
        stores.memories.list({ scope: memoryScope(summary.key, settings.memory.scope) }),
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
        memories: [...memories]
          .sort((a, b) => b.importance - a.importance)
          .slice(0, MEMORIES_SHOWN)
          .map((m) => ({
            type: m.type,
            text: m.text,
            ...(m.speaker === undefined ? {} : { speaker: m.speaker }),
          })),
      };
    }),
  );
}
