/**
 * When a channel's prompt finds the provider's cache cold. A provider keeps a prompt's prefix for a
 * while after its last use (`cache_ttl_seconds`: minutes in memory, a day with
 * `prompt_cache_retention = "24h"`); a channel prompted again after a longer silence pays its whole
 * prompt. A channel's prompts are its replies, so the silence is counted from its last reply, as the
 * working context shows it: any replica's, for the context is the store's.
 */
import { messageTime } from '../model/message-time.js';
import type { ContextView } from '../model/model.js';

/** When the newest reply of the context was written (epoch ms); undefined when it holds none with a time. */
export function lastReplyAt(context: Pick<ContextView, 'raw'>): number | undefined {
  for (let i = context.raw.length - 1; i >= 0; i--) {
    const message = context.raw[i];
    if (message?.role !== 'assistant') continue;
    const at = messageTime(message.ts);
    if (at !== undefined) return at;
  }
  return undefined;
}

/**
 * Whether a prompt sent at `now` finds the cache cold: no reply in the context, or the newest one
 * more than `ttlMs` before. A reply summarized away counts as long ago: passes keep the recent
 * messages raw, so that is a channel whose bot rarely answers.
 */
export function promptIsCold(context: Pick<ContextView, 'raw'>, now: number, ttlMs: number): boolean {
  const last = lastReplyAt(context);
  return last === undefined || now - last > ttlMs;
}
