/**
 * A tool-heavy synthetic transcript (`ebb transcript --tools`): the team chat of
 * `synthetic-transcript.ts`, with a third of the mentions of the bot answered through tools, the
 * way a channel with MCP servers fills its window. Each tool turn is the bot's call (an assistant
 * message with `toolCalls`), one result per call right after it (JSON search results, build logs of
 * 1,500 to 10,000 tokens, runbook pages), and the bot's short answer. Seeded like the other one.
 *
 * Logs arrive here as tool results, so the users' long log pastes of the plain transcript are left
 * out unless `logPastes` asks for them (`--log-pastes`): a quarter of the window in one message meets
 * the emergency threshold from 0.70 whatever the tiers do, which is a different test.
 */
import type { TranscriptMessage } from '@ebb/core';
import { random, type SyntheticOptions, syntheticTranscript } from './synthetic-transcript.js';

const SERVICES = ['billing-api', 'auth-gateway', 'search-indexer', 'notifier', 'ledger', 'web-frontend'];
const PEOPLE = ['ana', 'bongani', 'chen', 'dmitri', 'esi', 'farah', 'gus', 'hana', 'ines', 'jun'];

/** Share of the transcript's messages that start a tool turn. */
const TOOL_TURN_SHARE = 0.06;

export function* toolTranscript(
  messages: number,
  seed = 1,
  options: SyntheticOptions = {},
): Generator<TranscriptMessage> {
  const rnd = random(seed ^ 0x5eed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  let calls = 0;
  let n = 0;
  // The chat goes on as long as it takes to print `messages` messages, tool turns included.
  for (const message of syntheticTranscript(Number.MAX_SAFE_INTEGER, seed, {
    logPastes: options.logPastes ?? false,
  })) {
    if (n >= messages) return;
    yield message;
    n++;
    if (rnd() >= TOOL_TURN_SHARE) continue;
    const tools = TOOLS.filter(() => rnd() < 0.5);
    const chosen = tools.length > 0 ? tools : [pick(TOOLS)];
    // A tool turn is whole or absent: a call is never printed without its results.
    if (n + 3 + chosen.length > messages) continue;
    const ts = message.ts;
    const service = pick(SERVICES);
    const who = pick(PEOPLE);
    yield {
      role: 'user',
      author: who,
      text: `@ebb what is going on with ${service}? check CI and the tickets`,
      ...at(ts),
    };
    const ids = chosen.map(() => `call_${++calls}`);
    yield {
      role: 'assistant',
      author: 'ebb',
      text: '',
      toolCalls: chosen.map((tool, i) => ({
        id: ids[i] ?? '',
        name: tool.name,
        arguments: JSON.stringify(tool.arguments(service)),
      })),
      ...at(ts),
    };
    for (const [i, tool] of chosen.entries()) {
      yield {
        role: 'tool',
        author: tool.name,
        text: tool.result(service, pick, int),
        toolCallId: ids[i] ?? '',
        ...at(ts),
      };
    }
    yield {
      role: 'assistant',
      author: 'ebb',
      text: `@${who} ${service}: the last build failed at step ${int(2, 9)} (${pick(['a flaky test', 'a timeout', 'an OOM kill', 'a lint error'])}); ticket OPS-${int(100, 9999)} tracks it and ${pick(PEOPLE)} owns it.`,
      ...at(ts),
    };
    n += 3 + chosen.length;
  }
}

/** The `ts` field when the message had one. */
function at(ts: string | undefined): { ts?: string } {
  return ts === undefined ? {} : { ts };
}

type Pick = <T>(xs: readonly T[]) => T;
type Int = (lo: number, hi: number) => number;

interface FakeTool {
  readonly name: string;
  arguments(service: string): Record<string, unknown>;
  result(service: string, pick: Pick, int: Int): string;
}

const TOOLS: readonly FakeTool[] = [
  {
    name: 'github.search_issues',
    arguments: (service) => ({ repo: `acme/${service}`, query: 'is:open label:bug', per_page: 30 }),
    result: (service, pick, int) =>
      JSON.stringify(
        {
          total_count: int(20, 400),
          items: Array.from({ length: int(8, 30) }, () => ({
            number: int(100, 9000),
            title: `${service}: ${pick(['timeout on retry', 'pool exhausted under load', 'wrong currency rounding', 'flaky e2e test', 'memory leak in worker'])}`,
            state: 'open',
            labels: [{ name: 'bug' }, { name: pick(['p1', 'p2', 'p3']) }],
            user: { login: pick(PEOPLE) },
            comments: int(0, 40),
            created_at: `2026-01-${String(int(1, 28)).padStart(2, '0')}T${String(int(0, 23)).padStart(2, '0')}:00:00Z`,
            html_url: `https://github.com/acme/${service}/issues/${int(100, 9000)}`,
          })),
        },
        null,
        2,
      ),
  },
  {
    name: 'ci.build_log',
    arguments: (service) => ({ pipeline: service, run: 'latest' }),
    result: (service, pick, int) => {
      const lines = [`build #${int(1000, 99999)} of ${service}: FAILED`];
      for (let i = int(60, 400); i > 0; i--) {
        lines.push(
          `[${String(int(0, 59)).padStart(2, '0')}:${String(int(0, 59)).padStart(2, '0')}.${int(100, 999)}] ${pick(['INFO', 'INFO', 'WARN', 'ERROR'])} ${pick(['npm ci', 'tsc -b', 'vitest run', 'docker build', 'eslint'])}: ${pick(['resolving dependencies', 'compiled 412 files', 'retrying after ECONNRESET', 'test suite timed out after 5000 ms', 'layer cached', 'exit code 1'])} (${int(1, 9000)} ms)`,
        );
      }
      return lines.join('\n');
    },
  },
  {
    name: 'runbook.read',
    arguments: (service) => ({ page: `${service}/on-call` }),
    result: (service, pick, int) =>
      [
        `# ${service} on-call runbook`,
        ...Array.from(
          { length: int(10, 40) },
          (_, i) =>
            `${i + 1}. ${pick(['Check the dashboard for', 'Page the owner if', 'Roll back when', 'Scale the pool if'])} ${pick(['p99 above 800 ms', 'error rate above 2%', 'queue age above 60 s', 'disk above 90%'])}; see https://runbooks.example.com/${service}#step-${i + 1}.`,
        ),
      ].join('\n'),
  },
];
