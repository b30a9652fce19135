/**
 * The documentation's links lead somewhere: every relative link in the root's Markdown files and in
 * `docs/` names a file that exists and, with a `#fragment`, a heading of that file (GitHub's anchor:
 * the heading lower-cased, punctuation dropped, spaces as hyphens, a repeat numbered). The reference
 * moved out of the README into `docs/`, and a section that moves again must take its links with it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const PAGES = [
  ...readdirSync(ROOT).filter((f) => f.endsWith('.md')),
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The page's text outside fenced code blocks, line by line. */
function prose(path: string): string[] {
  let fenced = false;
  return readFileSync(join(ROOT, path), 'utf8')
    .split('\n')
    .filter((line) => {
      if (line.startsWith('```')) fenced = !fenced;
      return !fenced;
    });
}

function anchors(path: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(path)) {
    const heading = /^#{1,6} (.+)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replaceAll(' ', '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Links whose target is another place in the tree (not a URL, not an e-mail). */
function links(path: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  prose(path).forEach((text, i) => {
    const withoutCode = text.replace(/`[^`]*`/g, '');
    for (const m of withoutCode.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1] as string;
      if (!/^[a-z]+:/i.test(target)) out.push({ target, line: i + 1 });
    }
  });
  return out;
}

describe('the documentation', () => {
  it.each(PAGES)('%s links only to files and headings that exist', (page) => {
    const broken: string[] = [];
    for (const { target } of links(page)) {
      const [file = '', fragment] = target.split('#');
      const path = file === '' ? page : relative(ROOT, join(ROOT, dirname(page), file));
      if (!existsSync(join(ROOT, path))) broken.push(`${target} (no file ${path})`);
      else if (fragment !== undefined && path.endsWith('.md') && !anchors(path).has(fragment))
        broken.push(`${target} (no heading #${fragment} in ${path})`);
    }
    expect(broken).toEqual([]);
  });

  it('keeps the README a front page and every page a size one reads', () => {
    const sizes = PAGES.filter((p) => p === 'README.md' || p.startsWith('docs/')).map((p) => [
      p,
      readFileSync(join(ROOT, p)).length,
    ]);
    expect(sizes.filter(([, bytes]) => Number(bytes) > 25_000)).toEqual([]);
  });
});
