/**
 * What each platform receives for a model's Markdown reply: the adapters Ebb runs (the real Bolt and
 * discord.js clients) posting to FakeSlack and FakeDiscord, and the table below is exactly what the
 * fakes recorded. Slack gets mrkdwn (escaped, headings as bold lines, bullets, bare fences); Discord
 * renders Markdown itself and gets it as written. A 10,000-character reply with a code block across
 * the split point arrives as messages that each fit and each render on their own.
 */
import { DiscordAdapter } from '@ebb/discord';
import { SlackAdapter } from '@ebb/slack';
import { FakeDiscord } from '@ebb/testing/discord';
import { FAKE_SLACK, FakeSlack } from '@ebb/testing/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let slack: FakeSlack;
let discord: FakeDiscord;
let slackAdapter: SlackAdapter;
let discordAdapter: DiscordAdapter;
let slackKey: string;
let discordKey: string;

beforeAll(async () => {
  slack = await FakeSlack.start();
  discord = await FakeDiscord.start();
  slackAdapter = new SlackAdapter({
    mode: 'socket',
    botToken: 'xoxb-test-bot-token',
    appToken: 'xapp-test-app-token',
    slackApiUrl: slack.apiUrl,
  });
  discordAdapter = new DiscordAdapter({ token: discord.token, restApi: discord.restApi });
  const handlers = { onMessage: async () => undefined, onCommand: async () => '' };
  await Promise.all([slackAdapter.start(handlers), discordAdapter.start(handlers)]);
  slackKey = `slack:${FAKE_SLACK.teamId}:${FAKE_SLACK.channels.general}:1700000000.000100`;
  discordKey = `discord:${discord.guild.id}:${discord.guild.channel('general').id}`;
});

afterAll(async () => {
  await Promise.all([slackAdapter.stop(), discordAdapter.stop()]);
  await Promise.all([slack.close(), discord.close()]);
});

/** Sends `markdown` through both adapters; what each fake received for it. */
async function received(markdown: string): Promise<{ slack: string[]; discord: string[] }> {
  const [slackBefore, discordBefore] = [slack.messages.length, discord.posted.length];
  await Promise.all([slackAdapter.send(slackKey, markdown), discordAdapter.send(discordKey, markdown)]);
  return {
    slack: slack.messages.slice(slackBefore).map((m) => m.text),
    discord: discord.posted.slice(discordBefore).map((m) => m.content),
  };
}

// name, the model's Markdown, what Slack receives (Discord receives the Markdown as written)
const TABLE: readonly (readonly [string, string, string])[] = [
  ['bold', '**Ship it** today', '*Ship it* today'],
  ['italic', 'an *idea* and an _aside_', 'an _idea_ and an _aside_'],
  ['bold italic', '***both***', '*_both_*'],
  ['strikethrough', '~~old~~ new', '~old~ new'],
  [
    'link',
    'See [the docs](https://example.com/a?b=1&c=2).',
    'See <https://example.com/a?b=1&amp;c=2|the docs>.',
  ],
  ['headings', '# Plan\n\n## Step **one**\nDo it.', '*Plan*\n\n*Step one*\nDo it.'],
  [
    'nested lists',
    '- one\n  - two\n    - three\n- four\n\n1. first\n2. second',
    '• one\n    ◦ two\n        ▪ three\n• four\n\n1. first\n2. second',
  ],
  ['inline code', 'Run `grep "a<b" **x**` first', 'Run `grep "a&lt;b" **x**` first'],
  [
    'fenced code with a language',
    'Try:\n```ts\nconst ok = a < b && c > d;\n```',
    'Try:\n```\nconst ok = a &lt; b &amp;&amp; c &gt; d;\n```',
  ],
  ['escaping', 'if a < b & c > d then <!channel>', 'if a &lt; b &amp; c &gt; d then &lt;!channel&gt;'],
  ['user mention kept', 'Thanks <@U0ALICE01>, see <#C0GENERAL>!', 'Thanks <@U0ALICE01>, see <#C0GENERAL>!'],
  ['table', '| a | b |\n|---|---|\n| 1 | 2 |', '```\n| a | b |\n|---|---|\n| 1 | 2 |\n```'],
];

describe('a Markdown reply as each platform receives it', () => {
  it.each(TABLE)('%s', async (_name, markdown, toSlack) => {
    expect(await received(markdown)).toEqual({ slack: [toSlack], discord: [markdown] });
  });

  it('splits a 10,000-character reply with a code block across the split point, each message whole', async () => {
    const prose = (n: number) =>
      Array.from(
        { length: n },
        (_, i) => `Paragraph ${i}: ${'the compaction keeps what matters '.repeat(9)}`,
      );
    // 150 lines (~6,900 characters): longer than a Slack message, so no platform can avoid cutting it.
    const code = Array.from(
      { length: 150 },
      (_, i) => `    total += weights[${String(i).padStart(3, '0')}] * x;  # ok`,
    );
    const before = prose(8);
    const after = prose(8).map((p) => p.replace('Paragraph', 'Afterword'));
    const markdown = [...before, `\`\`\`python\n${code.join('\n')}\n\`\`\``, ...after].join('\n\n');
    expect(markdown.length).toBeGreaterThan(10_000);

    const { slack: toSlack, discord: toDiscord } = await received(markdown);

    for (const [messages, limit, reopened] of [
      [toSlack, 3_900, '```\n'],
      [toDiscord, 2_000, '```python\n'],
    ] as const) {
      expect(messages.length).toBeGreaterThan(2);
      for (const message of messages) {
        expect(message.length).toBeLessThanOrEqual(limit);
        expect(message.split('\n').filter((line) => line.startsWith('```')).length % 2).toBe(0);
      }
      // The block spans messages: closed at each cut, reopened at the top of the next message.
      const withCode = messages.filter((m) => m.includes('total +='));
      expect(withCode.length).toBeGreaterThanOrEqual(2);
      for (const message of withCode.slice(1)) expect(message.startsWith(reopened)).toBe(true);
      // Every line of code arrives once, whole, in order; every paragraph in one message.
      const lines = messages.flatMap((m) => m.split('\n')).filter((line) => line.includes('total +='));
      expect(lines).toEqual(code);
      for (const paragraph of [...before, ...after]) {
        expect(messages.filter((m) => m.includes(paragraph))).toHaveLength(1);
      }
    }
    // Slack's messages all go to the thread the reply belongs to.
    expect(new Set(slack.messages.slice(-toSlack.length).map((m) => m.threadTs))).toEqual(
      new Set(['1700000000.000100']),
    );
  });
});
