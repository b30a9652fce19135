import { describe, expect, it } from 'vitest';
import {
  boundedToolText,
  loggedToolText,
  MAX_LOGGED_TOOL_CHARS,
  MAX_TOOL_RESULT_CHARS,
} from './tool-text.js';

describe('tool text bounds', () => {
  it('is the archive search’s indexed prefix, so every kept character can be found', async () => {
    const { ARCHIVE_SEARCH } = await import('@ebb/core');
    expect(MAX_TOOL_RESULT_CHARS).toBe(ARCHIVE_SEARCH.indexedChars);
  });

  it('keeps a text at the limit whole, and never cuts a surrogate pair in half', () => {
    const exact = 'y'.repeat(MAX_TOOL_RESULT_CHARS);
    expect(boundedToolText(exact)).toBe(exact);
    const emoji = '😀'.repeat(MAX_TOOL_RESULT_CHARS);
    const cut = boundedToolText(emoji);
    const kept = cut.slice(0, cut.indexOf('\n\n['));
    expect(kept).toBe('😀'.repeat(kept.length / 2));
    expect(cut).toMatch(/\[[\d,]+ of 200,000 characters left out: the result was too long\]$/);
  });

  it('clips a log line’s text to MAX_LOGGED_TOOL_CHARS and says so', () => {
    expect(loggedToolText('short')).toBe('short');
    const logged = loggedToolText('z'.repeat(1_000_000));
    expect(logged.length).toBeLessThanOrEqual(MAX_LOGGED_TOOL_CHARS);
    expect(logged).toMatch(/^z+\n\n\[[\d,]+ of 1,000,000 characters left out: cut for the log\]$/);
  });
});
