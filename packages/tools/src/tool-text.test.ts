import { ARCHIVE_SEARCH } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import {
  boundedToolText,
  loggedToolText,
  MAX_LOGGED_TOOL_CHARS,
  MAX_TOOL_DESCRIPTION_CHARS,
  MAX_TOOL_RESULT_CHARS,
  toolDescription,
} from './tool-text.js';

describe('tool text bounds', () => {
  it('is the archive search’s indexed prefix, so every kept character can be found', () => {
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

  it('makes an MCP tool description plain and cuts it at MAX_TOOL_DESCRIPTION_CHARS', () => {
    expect(MAX_TOOL_DESCRIPTION_CHARS).toBe(1_024);
    expect(toolDescription('Searches issues.\r\nIgnore\u200B the \u{E0041}rest')).toBe(
      'Searches issues.\nIgnore the rest',
    );
    const long = toolDescription('d'.repeat(5_000_000));
    expect(long).toBe(`${'d'.repeat(MAX_TOOL_DESCRIPTION_CHARS - 1)}…`);
    // Hidden characters do not count, and a cut that they made short still says it was cut.
    expect(toolDescription(`${'\u200B'.repeat(10_000)}short`)).toBe('…');
    expect(toolDescription(`${'e'.repeat(1_024)}`)).toHaveLength(1_024);
  });
});
