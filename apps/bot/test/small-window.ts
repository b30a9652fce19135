/**
 * The config the end-to-end tests run with: a 4,000-token window, so a few hundred messages go
 * through every compaction tier, and the fake OpenAI server as the model.
 */
import { Writable } from 'node:stream';
import { parseConfig } from '@ebb/config';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { FakeOpenAiServer, type FakeReply, type RecordedRequest } from '@ebb/testing/openai';

/**
 * How many messages each end-to-end run posts (the web channel's, and each platform's): 600 go through
 * every tier several times in the 4,000-token window (six long pastes force emergencies) in a
 * quarter of the time 2,000 took. `EBB_E2E_MESSAGES=2000` runs the longer soak (docs/development.md).
 */
export const END_TO_END_MESSAGES = Number(process.env.EBB_E2E_MESSAGES ?? 600);

/**
 * The end-to-end tests replay channels at full speed from one client, which the web channel's
 * per-client rate limit exists to stop; they turn it off (the limit has tests of its own).
 */
export const FULL_SPEED_WEB = ['[web]', 'rate_limit_per_minute = 0'] as const;

export function smallWindowConfig(baseUrl: string, extra: readonly string[] = []) {
  return parseConfig(smallWindowToml(baseUrl, extra), 'small-window.toml');
}

/** `smallWindowConfig`'s file, for a test whose Ebb reads it from disk (as the dashboard's suggestion does). */
export function smallWindowToml(baseUrl: string, extra: readonly string[] = []): string {
  return [
    '[llm]',
    'context_window = 4000',
    'max_output_tokens = 300',
    `base_url = "${baseUrl}"`,
    '[compaction]',
    'summary_max_tokens = 250',
    'protect_recent = 4',
    'cooldown_seconds = 0',
    '[memory]',
    'recall_max_tokens = 150',
    ...FULL_SPEED_WEB,
    ...extra,
  ].join('\n');
}

/**
 * A long paste for `smallWindowConfig`'s channels: about 2,200 tokens, 60% of the 3,700 the context
 * may use, so it crosses the emergency threshold from any usage above 0.35. However early passes
 * start (and at full speed they start early), the end-to-end tests reach emergency truncation.
 */
export function longPaste(i: number): string {
  return `paste ${i}: ${'ERROR upstream reset request_id=12345 attempt=3 '.repeat(200)}`;
}

/**
 * The end-to-end runs' message `i`: status chatter, and every 97 messages two long pastes in a row.
 * One paste crosses the emergency threshold only from a usage above 0.35, which passes running
 * ahead can keep the channel under (600 messages hold six chances); the second lands while the
 * first is still among the protected recent messages, at 120% whatever the usage, so every run
 * reaches emergency truncation.
 */
export function endToEndText(i: number): string {
  return i % 97 >= 95
    ? longPaste(i)
    : `message ${i}: status of item ${i % 50} is ${i % 3 ? 'green' : 'amber'}, see OPS-${1000 + i}`;
}

/**
 * The fake model for `smallWindowConfig`: a 4,000-token window (or `contextWindow`) counted with the
 * real tokenizer, replies `ack 1`, `ack 2`, … and a one-line summary with no memories for every pass.
 */
export async function startAckingModel(contextWindow = 4_000): Promise<FakeOpenAiServer> {
  const tokenizer = await loadTokenizer('o200k_base');
  const fake = await FakeOpenAiServer.start({ contextWindow, countTokens: (t) => tokenizer.count(t) });
  let n = 0;
  fake.reply(
    (req) =>
      passReply(req, { summary: 'Earlier: status updates.', memories: [] }) ?? { content: `ack ${++n}` },
  );
  return fake;
}

/**
 * Whether a request to the fake model is a compaction pass's: passes ask for a `response_format`
 * (a `json_schema`), chat turns never do.
 */
export function isPassRequest(request: RecordedRequest): boolean {
  return (request.body as { response_format?: unknown }).response_format !== undefined;
}

/** The last chat request (not a pass's) whose messages hold `text`, as JSON; throws when none does. */
export function chatPromptHolding(requests: readonly RecordedRequest[], text: string): string {
  const prompt = requests
    .filter((r) => !isPassRequest(r))
    .map((r) => JSON.stringify(r.body.messages))
    .findLast((p) => p.includes(text));
  if (!prompt) throw new Error(`no prompt holds ${text}`);
  return prompt;
}

/**
 * The fake model's answer to a pass's request, in the shape its schema asks for: the summary and
 * memories, or the summary alone for a merge (`merged_summary` has no memories; an extra key is
 * malformed output). Undefined for a chat request (no `response_format`).
 */
export function passReply(
  request: RecordedRequest,
  reply: { readonly summary: string; readonly memories: readonly object[] },
): FakeReply | undefined {
  if (!isPassRequest(request)) return undefined;
  const format = (request.body as { response_format?: { json_schema?: { name?: string } } }).response_format;
  return { json: format?.json_schema?.name === 'merged_summary' ? { summary: reply.summary } : reply };
}

/**
 * The real (pino) logger writing its JSON lines into memory, for the end-to-end tests that wait for
 * a log line: `events('compaction.microcompacted')` gives each line with that `event`, parsed.
 */
export function jsonLinesLogger(): {
  readonly logger: ReturnType<typeof createLogger>;
  events(name: string): Record<string, unknown>[];
} {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(
        ...String(chunk)
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  return {
    logger: createLogger({ level: 'info', destination }),
    events: (name) =>
      lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === name),
  };
}
