/**
 * The config the end-to-end tests run with: a 4,000-token window, so a few hundred messages go
 * through every compaction tier, and the fake OpenAI server as the model.
 */
import { parseConfig } from '@ebb/config';

export function smallWindowConfig(baseUrl: string, extra: readonly string[] = []) {
  return parseConfig(
    [
      '[llm]',
      'context_window = 4000',
      'max_output_tokens = 300',
      `base_url = "${baseUrl}"`,
      '[compaction]',
      'summary_max_tokens = 250',
      'protect_recent = 4',
      'cooldown_seconds = 0',
      '[memory]',
      'recall_max_tokens = 150',
      ...extra,
    ].join('\n'),
    'small-window.toml',
  );
}
