/**
 * Splits a converted reply (mrkdwn, escaped, fences bare on their own lines, as `markdownToMrkdwn`
 * writes them) into Slack messages of at most `limit` characters, by the rules both platforms share
 * (`splitReply` in @ebb/core). What is Slack's own: its limit, its bare fences (a code block is reopened
 * with ``` alone, and a line such as ```ts is text), and its markup a cut must not fall inside.
 *
 * Why 3,900: `chat.postMessage` truncates `text` past 40,000 characters, but Slack recommends keeping
 * a message under 4,000, and longer ones render as a wall behind "Show more" and are cut short in
 * notifications. The count is taken on the escaped text Slack receives (`&amp;` counts 5), so it can
 * only overcount; 3,900 leaves room under the recommendation for that and for nothing else.
 */
import { splitReply } from '@ebb/core';

export const SLACK_MESSAGE_LIMIT = 3_900;

/** Slack markup (`<url|label>`, `<@U123>`) and the entities escaping writes (`&amp;`). */
const MRKDWN_SPANS = /<[^<>\n]*>|&(?:amp|lt|gt);/;

/** The messages to post, in order; none for text that is empty or only whitespace. */
export function splitMrkdwn(text: string, limit: number = SLACK_MESSAGE_LIMIT): string[] {
  return splitReply(text, { limit, unbreakable: MRKDWN_SPANS, fences: 'bare' });
}
