import { describe, expect, it } from 'vitest';
import { type SplitReplyOptions, splitReply } from './split-reply.js';

const NOTHING = /(?!)/;
const bare = (limit: number, unbreakable = NOTHING): SplitReplyOptions => ({
  limit,
  unbreakable,
  fences: 'bare',
});
const withInfo = (limit: number): SplitReplyOptions => ({ limit, unbreakable: NOTHING, fences: 'with-info' });
const code = Array.from({ length: 6 }, (_, i) => `let n${i} = ${i};`).join('\n');

describe('splitReply', () => {
  it('reopens a block cut in two with its info string, or bare where fences are bare', () => {
    expect(splitReply(`Code:\n\`\`\`ts\n${code}\n\`\`\`\nEnd.`, withInfo(60))).toEqual([
      'Code:\n```ts\nlet n0 = 0;\nlet n1 = 1;\nlet n2 = 2;\n```',
      '```ts\nlet n3 = 3;\nlet n4 = 4;\nlet n5 = 5;\n```\nEnd.',
    ]);
    expect(splitReply(`Code:\n\`\`\`\n${code}\n\`\`\`\nEnd.`, bare(60))[1]).toBe(
      '```\nlet n3 = 3;\nlet n4 = 4;\nlet n5 = 5;\n```\nEnd.',
    );
  });

  it('reads ```ts as text where fences are bare, so it adds no fences around it', () => {
    const text = Array.from({ length: 6 }, () => '```ts is text in mrkdwn').join('\n');
    const chunks = splitReply(text, bare(60));
    expect(chunks).toHaveLength(3);
    expect(chunks.join('\n')).toBe(text);
  });

  it('reopens a block bare when its opening line would take over a quarter of the limit', () => {
    const [, second] = splitReply(`\`\`\`${'x'.repeat(20)}\n${code}\n\`\`\``, withInfo(60));
    expect(second).toBe('```\nlet n2 = 2;\nlet n3 = 3;\nlet n4 = 4;\nlet n5 = 5;\n```');
  });

  it("lets the fence it adds stand for the block's own closing fence when that comes next", () => {
    const text = `\`\`\`\n${'a'.repeat(20)}\n${'b'.repeat(20)}\n\`\`\`\nafter`;
    expect(splitReply(text, bare(50))).toEqual([
      `\`\`\`\n${'a'.repeat(20)}\n${'b'.repeat(20)}\n\`\`\``,
      'after',
    ]);
  });

  it("never cuts inside the platform's spans, which are the caller's to name", () => {
    const text = `${'w'.repeat(20)} <x|a b c d e f g h i j> tail`;
    expect(splitReply(text, bare(40, /<[^<>\n]*>/))).toEqual([
      'w'.repeat(20),
      '<x|a b c d e f g h i j> tail',
    ]);
    expect(splitReply(text, bare(40))[0]).toBe(`${'w'.repeat(20)} <x|a b c d e f`);
  });

  it('cuts before a fence line the window ends in, and before a backtick run', () => {
    const fenced = `${'x'.repeat(14)}\n\`\`\`python-with-a-long-info\ncode`;
    expect(splitReply(fenced, withInfo(24))[0]).toBe('x'.repeat(14));
    expect(splitReply(`${'x'.repeat(15)}\`\`\`\`${'y'.repeat(30)}`, withInfo(20))[0]).toBe('x'.repeat(15));
  });

  it('closes a block opened by a fence line with trailing spaces when the cut falls in them', () => {
    const chunks = splitReply('a  a a```   \n```   \nxxxxxxxxxxxxxxxxxxxx ', bare(40));
    expect(chunks).toEqual(['a  a a```   \n```  \n```', '```\n\nxxxxxxxxxxxxxxxxxxxx ']);
  });

  it('refuses a limit that is not a whole number of at least 20', () => {
    expect(() => splitReply('text', bare(19))).toThrow(RangeError);
    expect(() => splitReply('text', bare(20.5))).toThrow(RangeError);
    expect(splitReply('text', bare(20))).toEqual(['text']);
  });
});
