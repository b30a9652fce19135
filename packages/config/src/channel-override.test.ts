import { describe, expect, it } from 'vitest';
import { channelCompactionBlock, withChannelCompaction } from './channel-override.js';
import { ConfigError } from './config-error.js';
import { parseConfig } from './parse-config.js';
import { resolveChannel } from './resolve-channel.js';

const FILE = `# a comment
[llm]
context_window = 16000

[channels."web:a".compaction]
protect_recent = 4
summary_max_tokens = 500
`;

describe('withChannelCompaction', () => {
  it("sets the channel's keys over the file's block and keeps the rest of the file", () => {
    const config = withChannelCompaction(FILE, 'config.toml', 'web:a', {
      background_threshold: 0.6,
      protect_recent: 2,
    });
    const a = resolveChannel(config, 'web:a').compaction;
    expect(a).toMatchObject({ backgroundThreshold: 0.6, protectRecent: 2, summaryMaxTokens: 500 });
    expect(resolveChannel(config, 'web:a').llm.contextWindow).toBe(16_000);
    const b = withChannelCompaction(FILE, 'config.toml', 'web:b', { background_threshold: 0.5 });
    expect(resolveChannel(b, 'web:b').compaction.backgroundThreshold).toBe(0.5);
    expect(resolveChannel(b, 'web:a').compaction.backgroundThreshold).toBe(0.8);
    expect(
      resolveChannel(withChannelCompaction('', 'built-in defaults', 'web:c', {}), 'web:c').channelKey,
    ).toBe('web:c');
  });

  it('refuses what config check refuses, naming the block', () => {
    expect(() =>
      withChannelCompaction(FILE, 'config.toml', 'web:a', {
        background_threshold: 0.9,
        aggressive_threshold: 0.85,
      }),
    ).toThrow(ConfigError);
    try {
      withChannelCompaction(FILE, 'config.toml', 'web:a', { background_fraction: 1.5 });
    } catch (err) {
      expect((err as ConfigError).message).toContain('channels."web:a".compaction.background_fraction');
    }
    expect.assertions(2);
  });
});

describe('channelCompactionBlock', () => {
  it("prints the whole block: the file's keys with the changes over them, pasteable in its place", () => {
    const block = channelCompactionBlock(FILE, 'web:a', { background_threshold: 0.6, protect_recent: 2 });
    expect(block).toBe(
      '[channels."web:a".compaction]\nprotect_recent = 2\nsummary_max_tokens = 500\nbackground_threshold = 0.6',
    );
    // Pasted in place of the file's block, the channel resolves as the checked candidate did.
    const pasted = FILE.replace(/\[channels\."web:a"\.compaction\][^[]*/, `${block}\n`);
    expect(resolveChannel(parseConfig(pasted, 'config.toml'), 'web:a').compaction).toEqual(
      resolveChannel(
        withChannelCompaction(FILE, 'config.toml', 'web:a', { background_threshold: 0.6, protect_recent: 2 }),
        'web:a',
      ).compaction,
    );
    // A channel with no block of its own: the changes alone.
    expect(channelCompactionBlock(FILE, 'web:b', { protect_recent: 6 })).toBe(
      '[channels."web:b".compaction]\nprotect_recent = 6',
    );
  });
});
