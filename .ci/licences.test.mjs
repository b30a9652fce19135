import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allows, refusedPackages } from './licences.mjs';

describe('the licence check', () => {
  it('passes permissive licences and judges SPDX expressions by OR and AND', () => {
    expect(allows('MIT', false)).toBe(true);
    expect(allows('MIT OR Apache-2.0', false)).toBe(true);
    expect(allows('(MIT OR GPL-3.0-only)', false)).toBe(true);
    expect(allows('Apache-2.0 AND MIT', false)).toBe(true);
    expect(allows('Apache-2.0 AND GPL-2.0-only', false)).toBe(false);
    expect(allows('GPL-3.0-only OR AGPL-3.0', false)).toBe(false);
  });

  it('lets weak copyleft build Ebb but not ship in it, and refuses a missing or odd licence', () => {
    expect(allows('MPL-2.0', true)).toBe(true);
    expect(allows('MPL-2.0', false)).toBe(false);
    expect(allows(undefined, true)).toBe(false);
    expect(allows('SEE LICENSE IN LICENSE.md', true)).toBe(false);
    expect(allows('(MIT', false)).toBe(false);
  });

  it('names each refused package of a lockfile, skipping workspace links', () => {
    const lock = {
      packages: {
        '': { name: 'ebb' },
        'packages/core': { license: 'Apache-2.0' },
        'node_modules/@ebb/core': { link: true },
        'node_modules/left-pad': { license: 'MIT' },
        'node_modules/copyleft': { license: 'GPL-3.0-only' },
        'node_modules/a/node_modules/unlabelled': {},
        'node_modules/lightningcss': { license: 'MPL-2.0', dev: true },
      },
    };
    expect(refusedPackages(lock)).toEqual([
      { name: 'copyleft', licence: 'GPL-3.0-only', dev: false },
      { name: 'unlabelled', licence: undefined, dev: false },
    ]);
  });

  it("refuses nothing in Ebb's own lockfile", () => {
    const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8'));
    expect(refusedPackages(lock)).toEqual([]);
  });
});
