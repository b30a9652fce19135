import { describe, expect, it } from 'vitest';
import { SLACK_MESSAGE_LIMIT, splitMrkdwn } from './split-mrkdwn.js';

const fenceLines = (chunk: string) => chunk.split('\n').filter((line) => line.trim() === '```').length;

describe('splitMrkdwn', () => {
  it('keeps text within the limit as one message and sends nothing for blank text', () => {
    expect(splitMrkdwn('hello')).toEqual(['hello']);
    const full = 'x'.repeat(SLACK_MESSAGE_LIMIT);
    expect(splitMrkdwn(full)).toEqual([full]);
    expect(splitMrkdwn(' \n\n ')).toEqual([]);
  });

  it('cuts at a paragraph boundary before a line break', () => {
    const text = `${'a'.repeat(30)}\n\n${'b'.repeat(15)}\n${'c'.repeat(20)}`;
    expect(splitMrkdwn(text, 60)).toEqual(['a'.repeat(30), `${'b'.repeat(15)}\n${'c'.repeat(20)}`]);
  });

  it('cuts between list items rather than inside one', () => {
    const items = Array.from({ length: 6 }, (_, i) => `• item ${i} ${'w '.repeat(5)}`.trimEnd());
    const chunks = splitMrkdwn(items.join('\n'), 60);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) for (const line of chunk.split('\n')) expect(items).toContain(line);
  });

  it('prefers the line after a code block to a line inside it', () => {
    const text = `intro\n\`\`\`\n${'code\n'.repeat(6)}\`\`\`\n${'after '.repeat(10)}`;
    const [first] = splitMrkdwn(text, 60);
    expect(first).toBe(`intro\n\`\`\`\n${'code\n'.repeat(6)}\`\`\``);
  });

  it('closes a code block at a cut inside it and reopens it in the next message', () => {
    const code = Array.from({ length: 30 }, (_, i) => `const v${i} = ${i};`).join('\n');
    const chunks = splitMrkdwn(`Here:\n\`\`\`\n${code}\n\`\`\`\nDone.`, 120);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(120);
      expect(fenceLines(chunk) % 2).toBe(0);
    }
    expect(chunks[1]?.startsWith('```\nconst')).toBe(true);
    expect(chunks.at(-1)?.endsWith('Done.')).toBe(true);
  });

  it('never cuts inside a link, a mention or an entity', () => {
    const link = '<https://example.com/a/very/long/path|the label with words>';
    const text = `${'word '.repeat(8)}${link} &amp; <@U0ALICE01> ${'tail '.repeat(8)}`;
    // From the smallest limit whose window holds the link whole (the budget keeps 4 for a fence).
    for (let limit = link.length + 4; limit <= 120; limit++) {
      for (const chunk of splitMrkdwn(text, limit)) {
        expect(chunk.length).toBeLessThanOrEqual(limit);
        expect(chunk.split('<').length).toBe(chunk.split('>').length);
        expect(chunk).not.toMatch(/&[a-z]*$/);
      }
    }
  });

  it('refuses a limit too small to make progress', () => {
    expect(() => splitMrkdwn('text', 10)).toThrow(RangeError);
  });
});
