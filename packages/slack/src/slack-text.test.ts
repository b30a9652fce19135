import { describe, expect, it } from 'vitest';
import { escapeSlackText, mentionedUserIds, renderSlackText } from './slack-text.js';

const context = { botUserId: 'UBOT', botName: 'ebb', userNames: new Map([['UALICE', 'Alice']]) };

describe('renderSlackText', () => {
  it.each([
    ['<@UBOT> hi', '@ebb hi'],
    ['<@UBOT|ebb> hi', '@ebb hi'],
    ['ask <@UALICE>', 'ask @Alice'],
    ['ask <@UBOB|bob>', 'ask @bob'],
    ['ask <@UBOB>', 'ask @UBOB'],
    ['see <#C123|general>', 'see #general'],
    ['<!here> deploy', '@here deploy'],
    ['<!subteam^S1|@oncall> help', '@oncall help'],
    ['<https://example.com|the docs>', 'the docs (https://example.com)'],
    ['<https://example.com>', 'https://example.com'],
    ['a &lt; b &amp;&amp; c &gt; d', 'a < b && c > d'],
    ['&amp;lt; stays literal', '&lt; stays literal'],
  ])('renders %j as %j', (text, expected) => {
    expect(renderSlackText(text, context)).toBe(expected);
  });
});

describe('mentionedUserIds', () => {
  it('lists mentioned users once each, without the bot', () => {
    expect(mentionedUserIds('<@UBOT> <@UALICE> <@WBOB|bob> <@UALICE>', 'UBOT')).toEqual(['UALICE', 'WBOB']);
  });

  it('stops at the limit', () => {
    expect(mentionedUserIds('<@U1> <@U2> <@U3>', 'UBOT', 2)).toEqual(['U1', 'U2']);
  });
});

describe('escapeSlackText', () => {
  it('escapes the three characters Slack reserves, and round-trips through rendering', () => {
    const text = 'if a < b && c > d then <!channel>';
    expect(escapeSlackText(text)).toBe('if a &lt; b &amp;&amp; c &gt; d then &lt;!channel&gt;');
    expect(renderSlackText(escapeSlackText(text), context)).toBe(text);
  });
});
