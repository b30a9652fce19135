import { describe, expect, it } from 'vitest';
import { toWireName, wireNames } from './tool-wire-names.js';

const WIRE = /^[a-zA-Z0-9_-]{1,64}$/;

describe('tool names on the wire', () => {
  it('sends server.tool as server__tool and a built-in as it is', () => {
    expect(toWireName('github.search_issues')).toBe('github__search_issues');
    expect(toWireName('search_history')).toBe('search_history');
    expect(toWireName('files.read.file')).toBe('files__read__file');
  });

  it('makes every name a valid function name: odd characters replaced, long names cut and hashed', () => {
    const long = `server.${'x'.repeat(100)}`;
    for (const name of ['a.b/c d', long, 'jira.search:issues', 'ü.tool']) {
      expect(toWireName(name)).toMatch(WIRE);
    }
    expect(toWireName(long)).toMatch(/^server__x{47}_[0-9a-f]{8}$/);
    // Two long names that share their start still differ.
    expect(toWireName(`${long}a`)).not.toBe(toWireName(`${long}b`));
  });

  it('keeps the names of one request unique, so each comes back to its own tool', () => {
    const names = wireNames(['a.b__c', 'a.b.c', 'search_history']);
    expect(names.get('a.b__c')).toBe('a__b__c');
    expect(names.get('a.b.c')).toMatch(/^a__b__c_[0-9a-f]{8}$/);
    expect(new Set(names.values()).size).toBe(3);
  });
});
