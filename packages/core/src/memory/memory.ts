/** Typed memories extracted from a channel's history and recalled into its prompts. */

export const MEMORY_TYPES = ['fact', 'decision', 'preference', 'person', 'task', 'event'] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];

export interface Memory {
  readonly id: string;
  readonly type: MemoryType;
  readonly text: string;
  /** 0..1: how much it matters when recall must choose. */
  readonly importance: number;
  readonly speaker?: string;
  /** The scope it may be recalled in: a channel key, or a workspace/guild scope when configured. */
  readonly scope: string;
  readonly fromSeq: number;
  readonly toSeq: number;
}

/** A memory as the extractor proposes it, before it has an id. */
export interface NewMemory {
  readonly type: MemoryType;
  readonly text: string;
  readonly importance: number;
  readonly speaker?: string;
  readonly scope: string;
  readonly channelKey: string;
  readonly fromSeq: number;
  readonly toSeq: number;
}

/**
 * Filler words a fingerprint leaves out. Never change this list: the fingerprints of stored memories
 * depend on it, and a changed list would make every near-duplicate new again.
 */
export const FINGERPRINT_STOPWORDS: readonly string[] = Object.freeze([
  'a',
  'an',
  'the',
  'is',
  'are',
  'was',
  'were',
  'to',
  'of',
  'and',
  'that',
  'for',
  'on',
  'in',
  'at',
]);
const STOPWORDS: ReadonlySet<string> = new Set(FINGERPRINT_STOPWORDS);
const MAX_FINGERPRINT_CHARS = 500;

/**
 * The identity of a memory within its scope: its type and its words, lower-cased, without
 * punctuation and filler words, in order. A retried extraction produces the same fingerprint, and
 * so does a near-duplicate that differs only in case, punctuation or articles ("Ana prefers tea." /
 * "ana prefers the tea"); stores refresh the existing memory instead of adding another.
 */
export function memoryFingerprint(type: MemoryType, text: string): string {
  const words = text
    .normalize('NFKC')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && !STOPWORDS.has(w));
  return `${type}:${words.join(' ')}`.slice(0, MAX_FINGERPRINT_CHARS);
}

export type MemoryScopeSetting = 'channel' | 'workspace';

/**
 * The scope a channel's memories are written to and recalled from. `channel`: the conversation's
 * channel (a Slack or Discord thread shares its channel's scope); `workspace`: the Slack team or Discord guild,
 * except for direct and group messages (Slack `D…`/`G…` channels, Discord `dm`), which always keep
 * their own scope so a private fact is never recalled elsewhere.
 * Keys: `slack:<team>:<channel>[:<thread_ts>]`, `discord:<guild>:<channel>[:<thread>]`, `web:<id>`.
 */
export function memoryScope(channelKey: string, setting: MemoryScopeSetting): string {
  const parts = channelKey.split(':');
  // A thread (the fourth part of a Slack or Discord key) shares its channel's scope.
  const channelScope =
    parts[0] === 'slack' || parts[0] === 'discord' ? parts.slice(0, 3).join(':') : channelKey;
  if (setting === 'channel' || parts.length < 3 || isPrivateConversation(parts)) return channelScope;
  return parts.slice(0, 2).join(':');
}

function isPrivateConversation(parts: readonly string[]): boolean {
  if (parts[0] === 'discord') return parts[1] === 'dm';
  if (parts[0] === 'slack') return /^[DG]/.test(parts[2] ?? '');
  return false;
}
