/**
 * The dashboard's API as the page reads it, typed with the server's own shapes (`dashboard-api.ts`).
 * Requests of one kind can answer out of order: `newest` tells a caller whether its answer is still
 * the newest asked for.
 */
import { errorText } from '@ebb/core';
import type {
  DashboardChannelDetail,
  DashboardChannelList,
  DashboardHistory,
  DashboardSuggestion,
  DashboardUsage,
} from '../dashboard-api.js';

/** The JSON at `path`; undefined on 404 (no such channel); throws on any other failure. */
async function read<T>(path: string): Promise<T | undefined> {
  const res = await fetch(path, { credentials: 'same-origin' });
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return (await res.json()) as T;
}

const channelPath = (key: string) => `/api/dashboard/channels/${encodeURIComponent(key)}`;

export const api = {
  channels: () => read<DashboardChannelList>('/api/dashboard/channels'),
  channel: (key: string) => read<DashboardChannelDetail>(channelPath(key)),
  /** `query` is `?limit=`, `?before=` or `?after=` (see `HistoryPage`). */
  history: (key: string, query: string) => read<DashboardHistory>(`${channelPath(key)}/history${query}`),
  usage: (key: string) => read<DashboardUsage>(`${channelPath(key)}/usage`),
  /** Seconds when the server computes it, at once when it has it cached. */
  suggestion: (key: string) => read<DashboardSuggestion>(`${channelPath(key)}/suggestion`),
};

const asked = new Map<string, number>();

/** Call before asking; the function it returns says whether no request of `kind` was asked since. */
export function newest(kind: string): () => boolean {
  const n = (asked.get(kind) ?? 0) + 1;
  asked.set(kind, n);
  return () => asked.get(kind) === n;
}

/** Why a request failed, for a sentence on the page. */
export const reason = errorText;
