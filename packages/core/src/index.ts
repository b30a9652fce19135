/**
 * `@ebb/core`: the pure compaction core, one folder a concept:
 *
 * - `model/`: messages, spans, tokens, the working context, the writes that move it, the policy.
 * - `usage/`: what model calls cost and what the provider cached.
 * - `decision/`: when to compact: the monitor, the decision after a turn, the compactor acting on it.
 * - `plans/`: what a pass, a truncation, a splice or a redaction does, and every store write: pure
 *   plans as values.
 * - `memory/`: typed memories: validation, upsert plans, recall.
 * - `ports/`: what the shell implements: stores, the model, the queue, tools.
 * - `tools/`: the history tools and the archive-search rules every store shares.
 * - `rendering/`: the prompt and the reply: rendering and splitting.
 * - `simulation/`: `ebb simulate`'s engine.
 * - `support/`: small shared helpers that know nothing of the rest: backoff, deadlines, errors, the
 *   logger's interface, the LRU map, shutdown steps, quoting untrusted text.
 *
 * The in-memory stores live apart, on the `@ebb/core/testing` subpath (tests only).
 */

export * from './decision/admit-pass.js';
export * from './decision/channel-compactor.js';
export * from './decision/compact-focus.js';
export * from './decision/compaction-events.js';
export * from './decision/compaction-monitor.js';
export * from './decision/compactor-settings.js';
export * from './decision/decide-after-turn.js';
export * from './decision/decide-on-silence.js';
export * from './decision/pass-room.js';
export * from './decision/threshold-reached.js';
export * from './memory/memory.js';
export * from './memory/memory-recall.js';
export * from './memory/plan-memory-upsert.js';
export * from './memory/validate-memories.js';
export * from './model/channel-counters.js';
export * from './model/compaction-policy.js';
export * from './model/context-writes.js';
export * from './model/encoding-for-model.js';
export * from './model/measure-message.js';
export * from './model/message-time.js';
export * from './model/model.js';
export * from './model/pass-errors.js';
export * from './model/platform.js';
export * from './model/run-status.js';
export * from './model/tokens.js';
export * from './model/tool-pairs.js';
export * from './model/working-context.js';
export * from './plans/extractive-summary.js';
export * from './plans/locate-change.js';
export * from './plans/plan-compaction.js';
export * from './plans/plan-emergency-truncation.js';
export * from './plans/plan-message-change.js';
export * from './plans/plan-message-rewrite.js';
export * from './plans/plan-microcompaction.js';
export * from './plans/plan-pass-start.js';
export * from './plans/plan-reconcile.js';
export * from './plans/plan-redaction.js';
export * from './plans/plan-snapshot.js';
export * from './plans/plan-splice.js';
export * from './plans/plan-summary-replacement.js';
export * from './plans/take-back.js';
export * from './ports/append-feed.js';
export * from './ports/append-fence.js';
export * from './ports/ports.js';
export * from './ports/tool-ports.js';
export * from './rendering/pin-context.js';
export * from './rendering/render-context.js';
export * from './rendering/split-reply.js';
export * from './simulation/simulation.js';
export * from './simulation/simulation-events.js';
export * from './simulation/transcript-clock.js';
export * from './support/backoff.js';
export * from './support/deadline.js';
export * from './support/error-text.js';
export * from './support/errors.js';
export * from './support/logger.js';
export * from './support/lru-map.js';
export * from './support/shutdown-steps.js';
export * from './support/untrusted-text.js';
export * from './tools/archive-search.js';
export * from './tools/history-tools.js';
export * from './usage/channel-spend.js';
export * from './usage/cold-prompt.js';
export * from './usage/prefix-cache.js';
export * from './usage/pricing.js';
export * from './usage/retrying-usage-store.js';
export * from './usage/spend-limits.js';
export * from './usage/usage.js';
