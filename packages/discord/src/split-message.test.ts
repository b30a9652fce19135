import { describe, expect, it } from 'vitest';
import { DISCORD_MESSAGE_LIMIT, splitMessage } from './split-message.js';

describe('splitMessage', () => {
  it('keeps text within the limit as one message and sends nothing for blank text', () => {
    expect(splitMessage('hello')).toEqual(['hello']);
    expect(splitMessage('x'.repeat(DISCORD_MESSAGE_LIMIT))).toEqual(['x'.repeat(DISCORD_MESSAGE_LIMIT)]);
    expect(splitMessage('  \n ')).toEqual([]);
  });

  it('cuts at the last line break, else the last space, else hard', () => {
    expect(splitMessage('aaaa bbbb\ncccc dddd eeee', 20)).toEqual(['aaaa bbbb', 'cccc dddd eeee']);
    expect(splitMessage('aaaa bbbb cccc dddd eeee ffff', 20)).toEqual(['aaaa bbbb cccc', 'dddd eeee ffff']);
    expect(splitMessage('x'.repeat(40), 20)).toEqual(['x'.repeat(16), 'x'.repeat(16), 'x'.repeat(8)]);
  });

  it('never cuts a surrogate pair in two', () => {
    const text = `${'x'.repeat(15)}😀${'y'.repeat(10)}`;
    const chunks = splitMessage(text, 20);
    expect(chunks.join('')).toBe(text);
    const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    for (const chunk of chunks) expect(chunk).not.toMatch(loneSurrogate);
  });

  it('closes a code block at the cut and reopens it with its language', () => {
    const code = Array.from({ length: 8 }, (_, i) => `const v${i} = ${i};`).join('\n');
    const chunks = splitMessage(`Here:\n\`\`\`ts\n${code}\n\`\`\`\nDone.`, 80);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(80);
      expect(chunk.match(/^```/gm)?.length ?? 0).toSatisfy((n: number) => n % 2 === 0);
    }
    expect(chunks[1]?.startsWith('```ts\n')).toBe(true);
    expect(chunks.at(-1)?.endsWith('Done.')).toBe(true);
  });

  it('cuts at a paragraph boundary before a line break, and between list items', () => {
    const text = `${'a'.repeat(12)}\n\n${'b'.repeat(5)}\n${'c'.repeat(10)}`;
    expect(splitMessage(text, 29)).toEqual(['a'.repeat(12), `${'b'.repeat(5)}\n${'c'.repeat(10)}`]);
    const items = Array.from({ length: 6 }, (_, i) => `- item ${i} with words`);
    for (const chunk of splitMessage(items.join('\n'), 50)) {
      for (const line of chunk.split('\n')) expect(items).toContain(line);
    }
  });

  it('cuts after a code block rather than inside it', () => {
    const text = `intro\n\`\`\`ts\n${'code;\n'.repeat(5)}\`\`\`\n${'after '.repeat(10)}`;
    expect(splitMessage(text, 60)[0]).toBe(`intro\n\`\`\`ts\n${'code;\n'.repeat(5)}\`\`\``);
  });

  it('never cuts inside a link or a mention', () => {
    const text = `${'word '.repeat(6)}[the docs page](https://example.com/docs) <@123456789> ${'tail '.repeat(6)}`;
    for (let limit = 50; limit <= 90; limit++) {
      for (const chunk of splitMessage(text, limit)) {
        expect(chunk.split('[').length).toBe(chunk.split(')').length);
        expect(chunk.split('<').length).toBe(chunk.split('>').length);
      }
    }
  });

  it('refuses a limit too small to make progress', () => {
    expect(() => splitMessage('text', 5)).toThrow(RangeError);
  });
});
