/**
 * Slack's message markup, both ways. Inbound, the transcript gets readable text: `<@U123>` becomes
 * `@alice` (this bot's mention becomes `@<bot name>`), `<#C1|general>` becomes `#general`, links keep
 * their label and URL, and `&amp;`/`&lt;`/`&gt;` are decoded. Outbound, `&`, `<` and `>` are escaped,
 * as Slack requires, so a reply cannot ping `@channel` or forge a link by accident.
 */

export interface RenderContext {
  readonly botUserId: string;
  readonly botName: string;
  /** Display names of the users mentioned in the text, by id (missing ones fall back to the id). */
  readonly userNames: ReadonlyMap<string, string>;
}

const MARKUP = /<([^<>]+)>/g;
const USER_MENTION = /<@([UW][A-Z0-9]+)(?:\|[^>]*)?>/g;

/** Ids of the users mentioned in `text` (this bot excluded), at most `limit`, first seen first. */
export function mentionedUserIds(text: string, botUserId: string, limit = 10): string[] {
  const ids = new Set<string>();
  for (const match of text.matchAll(USER_MENTION)) {
    const id = match[1];
    if (id !== undefined && id !== botUserId) ids.add(id);
    if (ids.size >= limit) break;
  }
  return [...ids];
}

export function renderSlackText(text: string, context: RenderContext): string {
  const rendered = text.replace(MARKUP, (whole, inner: string) => renderMarkup(inner, context) ?? whole);
  return decodeEntities(rendered);
}

export function escapeSlackText(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function renderMarkup(inner: string, context: RenderContext): string | undefined {
  const bar = inner.indexOf('|');
  const target = bar === -1 ? inner : inner.slice(0, bar);
  const label = bar === -1 ? undefined : inner.slice(bar + 1);
  switch (target[0]) {
    case '@': {
      const id = target.slice(1);
      if (id === context.botUserId) return `@${context.botName}`;
      return `@${context.userNames.get(id) ?? label ?? id}`;
    }
    case '#':
      return `#${label ?? target.slice(1)}`;
    case '!': {
      // <!here>, <!channel>, <!everyone>, <!subteam^S1|@team>, <!date^...|fallback>
      if (label !== undefined) return label;
      const special = target.slice(1).split('^')[0] ?? '';
      return `@${special}`;
    }
    default:
      if (label === undefined || label === target) return target;
      return `${label} (${target})`;
  }
}

function decodeEntities(text: string): string {
  return text.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}
