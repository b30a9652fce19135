/**
 * The model calls of a few passes and a reply, as the worker and the bot report them: summaries
 * (one failing for good after its retries, one whose 502 a retry hid), a merge and a reply, all of
 * one model. Shared by the tests of the metrics they feed.
 */
import type { LlmCall } from '@ebb/core';

export const CALLS: readonly LlmCall[] = [
  {
    purpose: 'summary',
    model: 'gpt-4o-mini',
    inputTokens: 40_000,
    outputTokens: 900,
    durationMs: 3_100,
    attempts: 1,
  },
  {
    purpose: 'summary',
    model: 'gpt-4o-mini',
    inputTokens: 38_000,
    outputTokens: 850,
    durationMs: 2_900,
    attempts: 1,
  },
  {
    purpose: 'merge',
    model: 'gpt-4o-mini',
    inputTokens: 1_800,
    outputTokens: 700,
    durationMs: 1_000,
    attempts: 1,
  },
  {
    purpose: 'summary',
    model: 'gpt-4o-mini',
    inputTokens: 0,
    outputTokens: 0,
    durationMs: 120_000,
    attempts: 4,
    error: 'llm_rate_limited',
    failedTries: ['llm_server', 'llm_rate_limited', 'llm_rate_limited', 'llm_rate_limited'],
  },
  // A summary call whose one 502 a retry hid.
  {
    purpose: 'summary',
    model: 'gpt-4o-mini',
    inputTokens: 0,
    outputTokens: 0,
    durationMs: 900,
    attempts: 2,
    failedTries: ['llm_server'],
  },
  {
    purpose: 'reply',
    model: 'gpt-4o-mini',
    inputTokens: 5_000,
    outputTokens: 120,
    durationMs: 800,
    attempts: 1,
  },
];
