import { parseConfig, resolveChannel } from '@ebb/config';
import { HISTORY_TOOLS, measureMessage, SILENT_LOGGER } from '@ebb/core';
import { InMemoryArchiveSearch, InMemoryChannelStore } from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { expect, it } from 'vitest';
import { startTools } from './toolbox.js';

// A channel with a small window beside the defaults (128,000): its context clips a message above
// 1,000 tokens (message_max_tokens, 25% of the window), the default channel's above 32,000.
const config = parseConfig(
  ['[channels."web:small".llm]', 'context_window = 4000', 'max_output_tokens = 500'].join('\n'),
  'tools.toml',
);

// A build log pasted into the channel: short lines, each of which a result indents.
const LOG = Array.from(
  { length: 1_500 },
  (_, i) =>
    `[12:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}] step ${i}: ok`,
).join('\n');

it('gives a channel read_history results its own context keeps whole, so every part of a long message can be read', async () => {
  const channels = new InMemoryChannelStore();
  const { mcp, toolbox } = await startTools({
    config: () => config,
    database: { archiveSearch: new InMemoryArchiveSearch(channels) },
    logger: SILENT_LOGGER,
  });
  try {
    for (const key of ['web:small', 'web:roomy']) {
      const settings = resolveChannel(config, key);
      const tokenizer = await loadTokenizer(settings.llm.encoding);
      await channels.append(key, { role: 'user', author: 'ci', text: LOG, tokens: 1, contextTokens: 1 });
      const tools = toolbox.forChannel(key, settings.tools.allow);
      const texts: string[] = [];
      for (let part = 1; part < 100; part++) {
        const args = part === 1 ? { from_seq: 1, to_seq: 1 } : { from_seq: 1, to_seq: 1, part };
        const { outcome } = await tools.call(
          { id: `c${part}`, name: 'read_history', arguments: JSON.stringify(args) },
          { timeoutMs: 30_000 },
        );
        expect(outcome.isError).toBe(false);
        // The result enters the context as a tool message: nothing of it may be clipped there.
        const { entry } = measureMessage(
          { seq: 2, role: 'tool', author: 'read_history', text: outcome.text, toolCallId: `c${part}` },
          tokenizer,
          settings.compaction.messageMaxTokens,
        );
        expect(entry.omittedTokens, `${key} part ${part}`).toBeUndefined();
        expect(tokenizer.count(outcome.text)).toBeLessThanOrEqual(HISTORY_TOOLS.maxResultTokens);
        texts.push(outcome.text);
        if (!/ part \d+\.\]$/.test(outcome.text)) break;
      }
      const body = texts
        .map((t) =>
          t
            .replace(/^#1 ci: /, '')
            .replace(/\n\[Part [^\n]*\]$/, '')
            .replaceAll('\n  ', '\n'),
        )
        .join('');
      expect(body).toBe(LOG);
      // The roomy channel reads it in far fewer, larger parts (at most 4,000 tokens each).
      if (key === 'web:roomy') expect(texts.length).toBeLessThan(10);
      else expect(texts.length).toBeGreaterThan(10);
    }
  } finally {
    await mcp.close();
  }
});
