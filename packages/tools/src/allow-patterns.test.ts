import { describe, expect, it } from 'vitest';
import { isToolAllowed, patternMatchesTool, patternServer } from './allow-patterns.js';

describe('allow patterns', () => {
  it.each([
    ['github.*', 'github.search_issues', true],
    ['github.*', 'github', false],
    ['github.*', 'githubx.search', false],
    ['github.search_*', 'github.search_issues', true],
    ['github.search_*', 'github.create_issue', false],
    ['*', 'search_history', true],
    ['*', 'github.search_issues', true],
    ['*.read_*', 'files.read_file', true],
    ['*.read_*', 'read_history', false],
    ['search_history', 'search_history', true],
    ['search_history', 'read_history', false],
    ['*_history', 'read_history', true],
    // A dot is a dot, not "any character"; matching is case-sensitive.
    ['github.x', 'githubax', false],
    ['GitHub.*', 'github.search', false],
  ])('%s matches %s: %s', (pattern, tool, expected) => {
    expect(patternMatchesTool(pattern, tool)).toBe(expected);
  });

  it('allows a tool when any pattern matches it, and nothing with no patterns', () => {
    expect(isToolAllowed(['search_history', 'github.*'], 'github.list_prs')).toBe(true);
    expect(isToolAllowed(['search_history', 'github.*'], 'jira.search')).toBe(false);
    expect(isToolAllowed([], 'search_history')).toBe(false);
  });

  it('names the server a pattern is about, or none for a built-in', () => {
    expect(patternServer('github.*')).toBe('github');
    expect(patternServer('*.read_*')).toBe('*');
    expect(patternServer('search_history')).toBeUndefined();
  });
});
