/**
 * The dashboard's channel list, from the stores: each channel's status as `ebb status` shows it
 * (`loadChannelStatus`), and its most important memories.
 */
import type { EbbConfig } from '@ebb/config';
import type { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import type { DashboardChannel } from '@ebb/web';
import { loadChannelStatus } from './channel-status.js';

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
  // The dashboard never shows the memory count; the system prompt's tokens are shared by channels.
  const systemTokens = new Map<string, Promise<number>>();
  return Promise.all(
    summaries.map(async (summary) => {
      const status = await loadChannelStatus(stores, config, summary, { memoryCounts: false, systemTokens });
      const memories = await stores.memories.list(
        { scope: status.memories.scope },
        { order: 'importance', limit: MEMORIES_SHOWN },
      );
      return {
        key: status.key,
        usage: status.usage,
        thresholds: status.thresholds,
        tokens: status.tokens,
        spans: status.spans,
        ...(status.microcompaction === undefined ? {} : { microcompaction: status.microcompaction }),
        passes: status.passes.map((p) => ({
          jobId: p.jobId,
          tier: p.tier,
          status: p.status,
          tokensBefore: p.tokensBefore,
          tokensAfter: p.tokensAfter,
          durationMs: p.durationMs,
          createdAt: p.createdAt,
        })),
        memories: memories.map((m) => ({
          type: m.type,
          text: m.text,
          ...(m.speaker === undefined ? {} : { speaker: m.speaker }),
        })),
      };
    }),
  );
}
