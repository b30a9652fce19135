import { describe, expect, it } from 'vitest';
import { markdownToMrkdwn } from './markdown-to-mrkdwn.js';

describe('markdownToMrkdwn', () => {
  it.each([
    ['bold', '**ship it** now', '*ship it* now'],
    ['bold with underscores', '__ship it__', '*ship it*'],
    ['italic', 'an *idea* and an _aside_', 'an _idea_ and an _aside_'],
    ['bold italic', '***both***', '*_both_*'],
    ['italic inside bold', '**a _b_ c**', '*a _b_ c*'],
    ['strikethrough', '~~old~~ new', '~old~ new'],
    [
      'link',
      'see [the docs](https://example.com/a?b=1&c=2)',
      'see <https://example.com/a?b=1&amp;c=2|the docs>',
    ],
    ['link with a bar in its label', '[a | b](https://x.io)', '<https://x.io|a ¦ b>'],
    ['link whose label is its URL', '[https://x.io](https://x.io)', '<https://x.io>'],
    ['relative link', 'open [the file](./a.md)', 'open the file (./a.md)'],
    ['image', '![chart](https://x.io/c.png)', '<https://x.io/c.png|chart>'],
    ['autolink', '<https://x.io/a>', '<https://x.io/a>'],
    ['headings', '# Plan\n### Step **one**', '*Plan*\n*Step one*'],
    ['inline code is not converted', 'run `a **b** <c> & d`', 'run `a **b** &lt;c&gt; &amp; d`'],
    ['double-backtick code', 'a `` x ` y `` b', 'a `x ` y` b'],
    ['escaping', 'if a < b && c > d', 'if a &lt; b &amp;&amp; c &gt; d'],
    ['user and channel mentions kept', 'ask <@U123> in <#C42|ops>', 'ask <@U123> in <#C42|ops>'],
    ['broadcast mentions escaped', '<!channel> <!here>', '&lt;!channel&gt; &lt;!here&gt;'],
    ['html escaped', 'a <br> b', 'a &lt;br&gt; b'],
    ['snake_case is no italic', 'call snake_case_name()', 'call snake_case_name()'],
    ['lone stars stay', '2 * 3 * 4', '2 * 3 * 4'],
    ['backslash escapes', '\\# not a heading \\<b\\>', '# not a heading &lt;b&gt;'],
    ['blockquote', '> **note** this', '> *note* this'],
    ['rule', 'a\n\n---\n\nb', 'a\n\n──────────\n\nb'],
    ['task list', '- [ ] todo\n- [x] done', '• ☐ todo\n• ☑ done'],
    [
      'nested lists',
      '- one\n  - two\n    - three\n      - four\n- back',
      '• one\n    ◦ two\n        ▪ three\n            • four\n• back',
    ],
    ['ordered lists', '1. first\n2) second\n   - sub', '1. first\n2. second\n    ◦ sub'],
    ['list item continuation', '- item\n  more of it', '• item\n    more of it'],
    [
      'fenced code with a language',
      'Try:\n```ts\nconst a = b < c && d;\n**not bold**\n```\nDone.',
      'Try:\n```\nconst a = b &lt; c &amp;&amp; d;\n**not bold**\n```\nDone.',
    ],
    ['tilde fence', '~~~\nx ~~y~~\n~~~', '```\nx ~~y~~\n```'],
    ['indented fence in a list', '- step:\n  ```sh\n  npm test\n  ```', '• step:\n```\nnpm test\n```'],
    ['unclosed fence is closed', '```\nx <y>', '```\nx &lt;y&gt;\n```'],
    ['table in a code block', '| a | b |\n|---|:-:|\n| 1 | 2 |', '```\n| a | b |\n|---|:-:|\n| 1 | 2 |\n```'],
    ['unmatched markers stay', '**open and *half', '**open and *half'],
    ['CRLF', 'a\r\n**b**', 'a\n*b*'],
  ])('%s', (_name, markdown, mrkdwn) => {
    expect(markdownToMrkdwn(markdown)).toBe(mrkdwn);
  });
});
