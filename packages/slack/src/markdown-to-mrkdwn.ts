/**
 * The model writes Markdown; Slack's `text` field takes mrkdwn. This converts one to the other, line
 * by line for blocks and in one left-to-right pass for inline markup, so nothing it writes is read
 * again as input (a Markdown `*italic*` becomes `_italic_`, and that `_` is never re-converted):
 *
 * | Markdown                        | mrkdwn                              |
 * | ------------------------------- | ----------------------------------- |
 * | `**bold**`, `__bold__`          | `*bold*`                            |
 * | `*italic*`, `_italic_`          | `_italic_`                          |
 * | `***both***`                    | `*_both_*`                          |
 * | `~~strike~~`                    | `~strike~`                          |
 * | `[text](https://x)`, `![alt](…)`| `<https://x\|text>` (http(s), mailto; else `text (url)`) |
 * | `<https://x>`                   | `<https://x>`                       |
 * | `# Heading` (any level)         | `*Heading*` (Slack has no headings) |
 * | `- item`, nested by indentation | `• item`, `    ◦ item`, `        ▪ item` |
 * | `1. item`, `1) item`            | `1. item`                           |
 * | `- [ ] todo`, `- [x] done`      | `• ☐ todo`, `• ☑ done`              |
 * | `> quote`                       | `> quote`                           |
 * | `---`                           | `──────────`                        |
 * | ```` ```ts ```` fenced code     | ```` ``` ```` (Slack shows no language), content verbatim |
 * | a `| a | b |` table             | the table as is, in a code block so its columns line up |
 *
 * Escaping: `&`, `<` and `>` become `&amp;`, `&lt;`, `&gt;` everywhere (inside code too: Slack
 * decodes entities there as well), so text can never form a link, a mention or `<!channel>` by
 * accident. Kept as written: user and channel mentions (`<@U123>`, `<#C123|general>`), which the
 * model uses to address someone; `<!here>`, `<!channel>` and `<!everyone>` are escaped like any text.
 * Code spans and code blocks are never converted, only escaped; an unclosed fence is closed.
 *
 * Slack cannot nest bold in bold, so inside a heading `**x**` adds nothing; emphasis inside a word
 * (`un**believ**able`) stays as Slack reads it (Slack needs a boundary around `*`).
 */

const FENCE_OPEN = /^([ \t]*)(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const LIST_ITEM = /^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const TASK = /^\[([ xX])\][ \t]+/;
const QUOTE = /^ {0,3}>+[ \t]?(.*)$/;
const TABLE_ROW = /^ {0,3}\|.*\|[ \t]*$/;
const TABLE_SEPARATOR = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
/** Slack markup kept as written: user, user-group-free channel mentions. */
const KEPT_MARKUP = /^<(?:@[UW][A-Z0-9]+|#C[A-Z0-9]+)(?:\|[^<>|]*)?>/;
const AUTOLINK = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/;
const LINK_SCHEMES = /^(?:https?:\/\/|mailto:)/i;

const BULLETS = ['•', '◦', '▪'] as const;
const INDENT = '    ';
const RULE_TEXT = '──────────';

export function markdownToMrkdwn(markdown: string): string {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  /** Indentation of the enclosing list items, outermost first. */
  let listIndents: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';

    const fence = FENCE_OPEN.exec(line);
    if (fence && !(fence[2]?.startsWith('`') && fence[3]?.includes('`'))) {
      const [, indent = '', marker = '```'] = fence;
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length; j++) {
        const candidate = lines[j] ?? '';
        if (isFenceClose(candidate, marker)) break;
        body.push(stripIndent(candidate, indent.length));
      }
      out.push(codeBlock(body));
      i = j; // the closing fence (or past the end, for an unclosed block)
      continue;
    }

    if (TABLE_ROW.test(line) && TABLE_SEPARATOR.test(lines[i + 1] ?? '')) {
      const rows: string[] = [];
      let j = i;
      for (; j < lines.length && (TABLE_ROW.test(lines[j] ?? '') || j === i + 1); j++) {
        rows.push((lines[j] ?? '').trim());
      }
      out.push(codeBlock(rows));
      i = j - 1;
      listIndents = [];
      continue;
    }

    if (line.trim() === '') {
      out.push('');
      continue;
    }

    const heading = HEADING.exec(line);
    if (heading) {
      const title = convertInline(heading[2] ?? '', { inBold: true }).trim();
      out.push(title === '' ? '' : `*${title}*`);
      listIndents = [];
      continue;
    }

    if (RULE.test(line)) {
      out.push(RULE_TEXT);
      listIndents = [];
      continue;
    }

    const item = LIST_ITEM.exec(line);
    if (item) {
      const [, rawIndent = '', marker = '-', rest = ''] = item;
      const width = indentWidth(rawIndent);
      while (listIndents.length > 0 && (listIndents.at(-1) ?? 0) > width) listIndents.pop();
      if (listIndents.length === 0 || (listIndents.at(-1) ?? 0) < width) listIndents.push(width);
      const level = listIndents.length - 1;
      const lead = INDENT.repeat(level);
      if (/^\d/.test(marker)) {
        out.push(`${lead}${marker.slice(0, -1)}. ${convertInline(rest)}`);
      } else {
        const task = TASK.exec(rest);
        const box = task ? (task[1] === ' ' ? '☐ ' : '☑ ') : '';
        const text = task ? rest.slice(task[0].length) : rest;
        out.push(`${lead}${BULLETS[level % BULLETS.length]} ${box}${convertInline(text)}`);
      }
      continue;
    }

    const quote = QUOTE.exec(line);
    if (quote) {
      out.push(`> ${convertInline(quote[1] ?? '')}`.trimEnd());
      listIndents = [];
      continue;
    }

    const indent = /^[ \t]*/.exec(line)?.[0] ?? '';
    if (indent === '') listIndents = [];
    // A continuation line of a list item keeps its item's indentation; other leading spaces go.
    const lead = listIndents.length > 0 && indent !== '' ? INDENT.repeat(listIndents.length) : '';
    out.push(lead + convertInline(line.slice(indent.length)));
  }
  return out.join('\n');
}

/** `&`, `<` and `>` as Slack requires them in any text. */
export function escapeMrkdwn(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Slack shows no language, so the fence is bare; the lines are only escaped. */
function codeBlock(lines: readonly string[]): string {
  return `\`\`\`\n${lines.map(escapeMrkdwn).join('\n')}\n\`\`\``;
}

/** A line of the opener's character, at least as long, however indented (lists indent fences). */
function isFenceClose(line: string, opener: string): boolean {
  const trimmed = line.trim();
  const char = opener[0] ?? '`';
  return trimmed.length >= opener.length && [...trimmed].every((c) => c === char);
}

function stripIndent(line: string, width: number): string {
  let i = 0;
  while (i < width && line[i] === ' ') i++;
  return line.slice(i);
}

function indentWidth(indent: string): number {
  return [...indent].reduce((n, c) => n + (c === '\t' ? 4 : 1), 0);
}

interface InlineContext {
  /** Inside a bold span (a heading): bold adds nothing, and Slack cannot nest it. */
  readonly inBold?: boolean;
}

const isSpace = (c: string | undefined): boolean => c === undefined || /\s/.test(c);
const isWordChar = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}]/u.test(c);

/** Converts one line's inline Markdown; the result is escaped. */
export function convertInline(text: string, context: InlineContext = {}): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    const rest = text.slice(i);

    if (c === '\\' && i + 1 < text.length && /[!-/:-@[-`{-~]/.test(text[i + 1] ?? '')) {
      out += escapeMrkdwn(text[i + 1] ?? '');
      i += 2;
      continue;
    }

    if (c === '`') {
      const run = /^`+/.exec(rest)?.[0] ?? '`';
      const close = findCodeClose(text, i + run.length, run.length);
      if (close !== -1) {
        const code = text.slice(i + run.length, close);
        const inner = run.length > 1 ? code.trim() : code;
        out += inner === '' ? escapeMrkdwn(text.slice(i, close + run.length)) : `\`${escapeMrkdwn(inner)}\``;
        i = close + run.length;
        continue;
      }
      out += run;
      i += run.length;
      continue;
    }

    if (c === '<') {
      const kept = KEPT_MARKUP.exec(rest);
      if (kept) {
        out += kept[0];
        i += kept[0].length;
        continue;
      }
      const auto = AUTOLINK.exec(rest);
      if (auto) {
        out += `<${linkTarget(auto[1] ?? '')}>`;
        i += auto[0].length;
        continue;
      }
    }

    if (c === '[' || (c === '!' && text[i + 1] === '[')) {
      const link = readLink(text, c === '!' ? i + 1 : i);
      if (link) {
        out += renderLink(link.label, link.url, context);
        i = link.end;
        continue;
      }
    }

    if (c === '*' || c === '_' || c === '~') {
      const span = readEmphasis(text, i);
      if (span) {
        out += renderEmphasis(
          span.marker,
          span.length,
          convertInline(span.inner, innerContext(span, context)),
          context,
        );
        i = span.end;
        continue;
      }
      const run = new RegExp(`^\\${c}+`).exec(rest)?.[0] ?? c;
      out += run;
      i += run.length;
      continue;
    }

    out += escapeMrkdwn(c);
    i++;
  }
  return out;
}

function innerContext(span: Emphasis, context: InlineContext): InlineContext {
  const bold = span.marker !== '~' && span.length >= 2;
  return bold ? { ...context, inBold: true } : context;
}

function renderEmphasis(marker: string, length: number, inner: string, context: InlineContext): string {
  if (marker === '~') return `~${inner}~`;
  const italic = length === 1 || length === 3;
  const bold = (length === 2 || length === 3) && !context.inBold;
  const italicised = italic ? `_${inner}_` : inner;
  return bold ? `*${italicised}*` : italicised;
}

interface Emphasis {
  readonly marker: string;
  readonly length: number;
  readonly inner: string;
  readonly end: number;
}

/**
 * The emphasis opened by the delimiter run at `start`, if a run of the same character and length
 * closes it on this line. Openers are followed by a non-space, closers preceded by one; `_` runs
 * never open or close inside a word (`snake_case_name` stays as it is); `~` needs two (`~~x~~`).
 */
function readEmphasis(text: string, start: number): Emphasis | undefined {
  const marker = text[start] as string;
  let length = 0;
  while (text[start + length] === marker) length++;
  if (length > 3 || (marker === '~' && length !== 2)) return undefined;
  const after = text[start + length];
  if (isSpace(after)) return undefined;
  if (marker === '_' && isWordChar(text[start - 1])) return undefined;

  let i = start + length;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '`') {
      const run = /^`+/.exec(text.slice(i))?.[0].length ?? 1;
      const close = findCodeClose(text, i + run, run);
      i = close === -1 ? i + run : close + run;
      continue;
    }
    if (c !== marker) {
      i++;
      continue;
    }
    let run = 0;
    while (text[i + run] === marker) run++;
    const closes =
      run === length &&
      !isSpace(text[i - 1]) &&
      i > start + length &&
      !(marker === '_' && isWordChar(text[i + run]));
    if (closes) {
      return { marker, length, inner: text.slice(start + length, i), end: i + run };
    }
    i += run;
  }
  return undefined;
}

function findCodeClose(text: string, from: number, length: number): number {
  let i = from;
  while (i < text.length) {
    const next = text.indexOf('`', i);
    if (next === -1) return -1;
    let run = 0;
    while (text[next + run] === '`') run++;
    if (run === length) return next;
    i = next + run;
  }
  return -1;
}

interface Link {
  readonly label: string;
  readonly url: string;
  readonly end: number;
}

/** `[label](url "title")` starting at the `[` at `start`. */
function readLink(text: string, start: number): Link | undefined {
  let depth = 0;
  let i = start;
  for (; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '[') depth++;
    else if (c === ']' && --depth === 0) break;
  }
  if (i >= text.length || text[i + 1] !== '(') return undefined;
  const label = text.slice(start + 1, i);
  let j = i + 2;
  let parens = 0;
  for (; j < text.length; j++) {
    const c = text[j];
    if (c === '(') parens++;
    else if (c === ')' && parens-- === 0) break;
  }
  if (j >= text.length) return undefined;
  const target = text.slice(i + 2, j).trim();
  const url = (/^<([^<>]*)>/.exec(target)?.[1] ?? target.split(/\s+/)[0] ?? '').trim();
  if (url === '') return undefined;
  return { label, url, end: j + 1 };
}

function renderLink(label: string, url: string, context: InlineContext): string {
  const text = convertInline(label, context).trim();
  if (!LINK_SCHEMES.test(url)) return text === '' ? escapeMrkdwn(url) : `${text} (${escapeMrkdwn(url)})`;
  if (text === '' || text === escapeMrkdwn(url)) return `<${linkTarget(url)}>`;
  // A label cannot hold `|` (it ends the URL part) or markup of its own.
  return `<${linkTarget(url)}|${text.replaceAll('|', '¦')}>`;
}

/** A URL inside `<…>`: `&` escaped as Slack expects, and `|`, `<`, `>` percent-encoded. */
function linkTarget(url: string): string {
  return url.replaceAll('&', '&amp;').replaceAll('|', '%7C').replaceAll('<', '%3C').replaceAll('>', '%3E');
}
