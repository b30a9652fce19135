import { parseConfig, resolveChannel } from '@ebb/config';
import { loadTokenizer } from '@ebb/llm';
import { expect, it } from 'vitest';
import { compactorSettingsOf, describeChannel } from '../status/channel-status.js';
import { contextReport } from './context-report.js';

const tokenizer = await loadTokenizer('o200k_base');

/** `/context` of a channel holding `tokens` as we count them, with the provider counting `factor` times more. */
function report(tokens: number, factor: number): string {
  const settings = resolveChannel(parseConfig('[llm]\ncontext_window = 11000\n', 'context.toml'), 'web:1');
  const status = describeChannel({
    summary: { key: 'web:1', headSeq: 40, generation: 3, tokens },
    spans: [],
    settings,
    compactor: compactorSettingsOf(settings, tokenizer, 0),
    calibration: { factor, samples: 12 },
    runs: [],
    memories: { scope: 'web:1', count: 0 },
    prices: {},
    settingRows: null,
  });
  return contextReport(status, { stubbedInContext: 0 });
}

it('prints the tokens it puts beside the usage as calibrated as the usage, and our own count beside', () => {
  const calibrated = report(4_000, 1.1);
  // 4,000 × 1.1 of 6,904 (11,000 less the 4,096 kept for the reply): 63.7%.
  expect(calibrated).toMatch(/ 63\.7%\n/);
  expect(calibrated).toContain('tokens: 4400 of 6904 (counted 4000 × calibration 1.10; 40 recent messages,');
  const uncalibrated = report(4_000, 1);
  expect(uncalibrated).toMatch(/ 57\.9%\n/);
  expect(uncalibrated).toContain('tokens: 4000 of 6904 (40 recent messages');
});
