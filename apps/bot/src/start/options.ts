/** What `startEbb` is started with: the settings, and what tests shorten or point at local fakes. */
import type { EbbConfig, EbbEnv } from '@ebb/config';
import type { Database } from '@ebb/db';
import type { RetryOptions } from '@ebb/llm';
import type { Logger } from '@ebb/logger';
import type { McpBackoff } from '@ebb/tools';
import type { PlatformStartPolicy } from '../bot/platform-connections.js';

export interface StartOptions {
  readonly config: () => EbbConfig;
  readonly env: EbbEnv;
  readonly logger: Logger;
  /** Run compaction passes in this process too (`ebb dev`). */
  readonly withWorker: boolean;
  /** Overrides `[web] port` (0 for a free port in tests). */
  readonly webPort?: number;
  /** Tests: a database already opened and migrated. */
  readonly database?: Database;
  /** The LLM retry policy of replies and passes (default: each one's own); tests shorten it. */
  readonly llmRetry?: RetryOptions;
  /** Node process metrics in /metrics (off in tests that start several instances). */
  readonly processMetrics?: boolean;
  /** How a platform that cannot connect at start is retried (tests shorten it). */
  readonly platformRetry?: Omit<PlatformStartPolicy, 'degradable'>;
  /** Tests: where the Slack Web API and Discord REST live (local fakes), and Slack's HTTP receiver port. */
  readonly platforms?: {
    readonly slackApiUrl?: string;
    readonly slackPort?: number;
    readonly discordRestApi?: string;
  };
  /** How a crashed or failed MCP server is retried (tests shorten it). */
  readonly mcpBackoff?: Partial<McpBackoff>;
}

/** The LLM retry policy as a spread: absent when the options leave each one its own. */
export function llmRetry(options: StartOptions): { retry?: RetryOptions } {
  return options.llmRetry === undefined ? {} : { retry: options.llmRetry };
}
