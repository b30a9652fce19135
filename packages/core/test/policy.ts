/** The compaction policy core tests start from (the shipped defaults at a 128k window); override per test. */
import type { CompactionPolicy } from '../src/model/compaction-policy.js';

export function testPolicy(overrides: Partial<CompactionPolicy> = {}): CompactionPolicy {
  return {
    backgroundThreshold: 0.8,
    aggressiveThreshold: 0.85,
    emergencyThreshold: 0.95,
    backgroundFraction: 0.3,
    aggressiveFraction: 0.5,
    emergencyFraction: 0.5,
    protectRecent: 10,
    summaryMaxTokens: 4_096,
    cooldownMs: 10_000,
    maxIneffectivePasses: 3,
    messageMaxTokens: 32_000,
    microcompaction: true,
    microcompactThreshold: 0.6,
    keepToolResults: 3,
    microcompactMinTokens: 200,
    ...overrides,
  };
}
