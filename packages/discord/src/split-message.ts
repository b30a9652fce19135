/**
 * Splits a reply into Discord messages of at most `limit` characters, by the rules both platforms
 * share (`splitReply` in @ebb/core). Discord renders Markdown itself, so a code block cut in two is
 * reopened with its language (```ts), and a cut never falls inside a link (`[label](url)`) or a
 * mention (`<@123>`, `<#1>`, `<:emoji:1>`).
 */
import { splitReply } from '@ebb/core';

export const DISCORD_MESSAGE_LIMIT = 2000;

const MARKDOWN_SPANS = /<[^<>\n]*>|\[[^\]\n]*\]\([^)\s]*\)/;

/** The messages to post, in order; none for text that is empty or only whitespace. */
export function splitMessage(text: string, limit: number = DISCORD_MESSAGE_LIMIT): string[] {
  return splitReply(text, { limit, unbreakable: MARKDOWN_SPANS, fences: 'with-info' });
}
