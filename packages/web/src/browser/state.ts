/**
 * What the page holds: every channel row (from the list route, refreshed every 15 s, after a splice
 * and from turn events and the selected channel's detail), the list's sort, filter and page, and the
 * selected channel's detail, usage and loaded history.
 */
import type {
  DashboardChannelDetail,
  DashboardChannelRow,
  DashboardMessage,
  DashboardSpan,
  DashboardUsage,
} from '../dashboard-api.js';

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** A list row; turn events move its usage in place (`turnAt`: when the last did, on this page's clock). */
export type Row = Writable<DashboardChannelRow> & { turnAt?: number };

export type SortKey = 'key' | 'usage' | 'messages' | 'lastActiveAt';

export interface PageState {
  rows: Row[];
  sort: SortKey;
  /** 1 ascending, -1 descending. */
  dir: 1 | -1;
  filter: string;
  platform: string;
  page: number;
  /** The keys of the rows on the list's page. */
  shown: Set<string>;
  /** The selected channel. */
  key: string | null;
  detail: DashboardChannelDetail | null;
  usage: DashboardUsage | null;
  /** Loaded history, by seq; at most `MAX_LOADED`. */
  messages: DashboardMessage[];
  /** The spans the loaded pages named, by their first seq. */
  spans: Map<number, DashboardSpan>;
  history: { readonly headSeq: number; readonly prefixEnd: number } | null;
}

export const state: PageState = {
  rows: [],
  sort: 'usage',
  dir: -1,
  filter: '',
  platform: '',
  page: 0,
  shown: new Set(),
  key: null,
  detail: null,
  usage: null,
  messages: [],
  spans: new Map(),
  history: null,
};
