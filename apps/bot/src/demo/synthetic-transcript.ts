/**
 * A synthetic but realistic team-chat transcript: mostly short prose between a handful of people,
 * questions and decisions with names, numbers and links, code snippets, the bot's answers, JSON
 * tool output, and now and then a large log paste (the kind that sends a channel into an emergency).
 * Seeded, so the same seed always gives the same transcript.
 */
import type { TranscriptMessage } from '@ebb/core';

const PEOPLE = ['ana', 'bongani', 'chen', 'dmitri', 'esi', 'farah', 'gus', 'hana', 'ines', 'jun'];
const SERVICES = ['billing-api', 'auth-gateway', 'search-indexer', 'notifier', 'ledger', 'web-frontend'];
const TOPICS = [
  'the deploy',
  'the migration',
  'the flaky test',
  'the outage',
  'the Q3 roadmap',
  'the on-call rota',
];
const VERBS = ['rolled back', 'merged', 'reviewed', 'paged', 'benchmarked', 'rebased', 'restarted', 'tagged'];
const OPENERS = ['fwiw', 'quick one:', 'heads up,', 'so', 'ok', 'hmm', 'update:', 'btw'];
const DECISIONS = [
  'we decided to ship behind a flag',
  'agreed: freeze merges until the fix lands',
  "let's move the standup to 10:30",
  'we will keep the old endpoint until March',
  'plan is to split the table by tenant',
];

/** mulberry32: small, fast, good enough for test data. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SyntheticOptions {
  /**
   * The odd user paste of a long log (1 message in 1,000, up to a quarter of a 128k window). On by
   * default; the tool transcript leaves it out, since there logs arrive as tool results.
   */
  readonly logPastes?: boolean;
}

export function* syntheticTranscript(
  messages: number,
  seed = 1,
  options: SyntheticOptions = {},
): Generator<TranscriptMessage> {
  const logPastes = options.logPastes ?? true;
  const rnd = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  let time = Date.UTC(2026, 0, 5, 9, 0, 0);

  for (let i = 0; i < messages; i++) {
    time += int(3, 90) * 1000;
    const ts = new Date(time).toISOString();
    const r = rnd();
    const who = pick(PEOPLE);
    if (r < 0.001) {
      const text = logPaste(int(300, 1500), pick, int);
      yield logPastes
        ? { role: 'user', author: who, text, ts }
        : { role: 'user', author: who, text: prose(pick, int, rnd), ts };
    } else if (r < 0.06) {
      yield { role: 'assistant', author: 'ebb', text: toolOutput(int(2, 20), pick, int), ts };
    } else if (r < 0.15) {
      yield { role: 'assistant', author: 'ebb', text: answer(pick, int), ts };
    } else if (r < 0.22) {
      yield { role: 'user', author: who, text: codeSnippet(pick, int), ts };
    } else {
      yield { role: 'user', author: who, text: prose(pick, int, rnd), ts };
    }
  }
}

type Pick = <T>(xs: readonly T[]) => T;
type Int = (lo: number, hi: number) => number;

function prose(pick: Pick, int: Int, rnd: () => number): string {
  const r = rnd();
  if (r < 0.25)
    return `${pick(OPENERS)} @${pick(PEOPLE)} did you see ${pick(TOPICS)}? ${pick(SERVICES)} p99 went to ${int(120, 2400)}ms`;
  if (r < 0.4) return `${pick(DECISIONS)} (ticket OPS-${int(100, 9999)})`;
  if (r < 0.55)
    return `I ${pick(VERBS)} ${pick(SERVICES)} v${int(1, 4)}.${int(0, 30)}.${int(0, 9)}, see https://git.example.com/${pick(SERVICES)}/pull/${int(10, 3000)}`;
  if (r < 0.7) return `@ebb can you summarize what we said about ${pick(TOPICS)} yesterday?`;
  if (r < 0.85)
    return `${pick(['yes', 'no', 'agreed', '+1', 'makes sense', 'not sure', 'looking'])}${rnd() < 0.5 ? `, ${pick(OPENERS)} ${pick(TOPICS)} is blocked on ${pick(PEOPLE)}` : ''}`;
  return `${pick(OPENERS)} ${pick(TOPICS)} again: ${pick(SERVICES)} is ${pick(['fine', 'degraded', 'down in eu-west-1', 'back to normal'])} since ${int(0, 23)}:${String(int(0, 59)).padStart(2, '0')} UTC`;
}

function answer(pick: Pick, int: Int): string {
  return [
    `Here is what I found about ${pick(TOPICS)}:`,
    `- ${pick(PEOPLE)} ${pick(VERBS)} ${pick(SERVICES)} at ${int(8, 18)}:${String(int(0, 59)).padStart(2, '0')}.`,
    `- ${pick(DECISIONS)}.`,
    `- Open question from ${pick(PEOPLE)}: should ${pick(SERVICES)} retry ${int(2, 8)} times?`,
  ].join('\n');
}

function codeSnippet(pick: Pick, int: Int): string {
  const svc = pick(SERVICES);
  const lines = [
    'does this look right?',
    '```ts',
    `export async function handle(req: Request): Promise<Response> {`,
    `  const client = await pool.connect(); // ${svc}`,
    '  try {',
    `    const { rows } = await client.query('SELECT id, status FROM jobs WHERE tenant = $1 LIMIT ${int(10, 500)}', [req.tenant]);`,
    `    return Response.json({ ok: true, count: rows.length, retryAfter: ${int(1, 60)} });`,
    '  } finally {',
    '    client.release();',
    '  }',
    '}',
    '```',
  ];
  return lines.slice(0, int(6, lines.length)).join('\n');
}

function toolOutput(records: number, pick: Pick, int: Int): string {
  const rows = Array.from({ length: records }, (_, i) => ({
    id: `inc-${int(1000, 9999)}-${i}`,
    service: pick(SERVICES),
    status: pick(['open', 'resolved', 'acknowledged']),
    latency_ms: int(5, 5000),
    owner: pick(PEOPLE),
    updated_at: `2026-01-${String(int(1, 28)).padStart(2, '0')}T${String(int(0, 23)).padStart(2, '0')}:00:00Z`,
  }));
  return JSON.stringify({ tool: 'incidents.search', results: rows }, null, 1);
}

function logPaste(lines: number, pick: Pick, int: Int): string {
  const out = ['here is the full log from the failing run:', '```'];
  for (let i = 0; i < lines; i++) {
    out.push(
      `2026-01-05T${String(int(0, 23)).padStart(2, '0')}:${String(int(0, 59)).padStart(2, '0')}:${String(int(0, 59)).padStart(2, '0')}.${int(100, 999)}Z ${pick(['INFO', 'WARN', 'ERROR', 'DEBUG'])} [${pick(SERVICES)}] request_id=${int(100000, 999999)} ${pick(['retrying upstream', 'pool exhausted', 'cache miss', 'slow query', 'connection reset by peer'])} attempt=${int(1, 5)}`,
    );
  }
  out.push('```');
  return out.join('\n');
}
