/**
 * Every log line names its step (docs/operations.md, "Logs"): a scan of the tree's sources (apps/, packages/,
 * workers/; not tests, benchmarks or the dashboard's browser code) for every call of a logger level
 * (`log.info(…)`, `this.#log.warn(…)`, `logger.child({…}).error(…)`), whose first argument must be
 * an object with an `event` in the `area.verb` form, and every such name must be in the operations guide.
 *
 * The sources are parsed, not matched line by line, so a call split over lines, a comment in it, a
 * spread of fields built earlier or a renamed logger cannot hide a line from the scan. TypeScript 7
 * has no compiler API for JavaScript; the parser is Oxc's, which Vite (under vitest) exports.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from 'vite';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
const EVENT_NAME = /^[a-z]+(\.[a-z_]+)+$/;

/**
 * Receivers of a method named like a level that are not loggers, keyed `file:receiver`, and why.
 * Anything else that is not named like a logger (`log`, `logger`, `…Log`, `…Logger`, a `child(…)` of
 * one) fails the scan, so a logger under a new name, or a `console.error` in the server's code, is
 * seen and decided, never skipped.
 */
const NOT_LOGGERS: Readonly<Record<string, string>> = {
  'apps/bot/bin/ebb.mjs:console': 'prints to the terminal that ebb was started in, before any logger exists',
  'packages/db/bin/pglite-template.mjs:console': 'an npm install step, printing to the terminal',
  'packages/slack/src/slack-adapter.ts:app':
    "Bolt's App.error registers Slack's error handler (which logs slack.event_failed)",
  'packages/slack/src/slack-lookups.ts:client.users': "Slack's Web API method users.info",
  'packages/slack/src/slack-lookups.ts:client.conversations': "Slack's Web API method conversations.info",
};

/**
 * Fields passed by name whose type requires `event`, so the compiler holds what the scan cannot see,
 * and why. Keyed `file:name`.
 */
const TYPED_FIELDS: Readonly<Record<string, string>> = {
  'packages/compaction/src/run-worker.ts:event':
    'logCompactionEvent logs a CompactionLogEvent as it is; its type names every compaction.* event',
};

interface Node {
  readonly type: string;
  readonly start: number;
  readonly end: number;
  readonly [key: string]: unknown;
}

interface LogCall {
  readonly file: string;
  readonly line: number;
  readonly call: string;
  /** The literal event names the call can log (both arms of a conditional). */
  readonly events: readonly string[];
  /** Why the call fails the contract; undefined when it keeps it. */
  readonly problem: string | undefined;
  /** The entry of NOT_LOGGERS or TYPED_FIELDS that let it pass, if one did. */
  readonly allowedBy?: string;
}

const isNode = (v: unknown): v is Node =>
  typeof v === 'object' && v !== null && typeof (v as Node).type === 'string';

function children(node: Node): Node[] {
  const out: Node[] = [];
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) out.push(...value.filter(isNode));
    else if (isNode(value)) out.push(value);
  }
  return out;
}

/** The expression under type assertions and parentheses. */
function bare(node: Node): Node {
  let n = node;
  while (
    ['TSAsExpression', 'TSNonNullExpression', 'TSSatisfiesExpression', 'ParenthesizedExpression'].includes(
      n.type,
    )
  )
    n = n.expression as Node;
  return n;
}

/** The name a receiver ends in: `log`, `#log`, `options.logger` → `logger`, `passLogger(…)` → `passLogger`. */
function lastName(node: Node): string | undefined {
  const n = bare(node);
  if (n.type === 'Identifier' || n.type === 'PrivateIdentifier') return n.name as string;
  if (n.type === 'MemberExpression' && !n.computed) return lastName(n.property as Node);
  if (n.type === 'CallExpression') return lastName(n.callee as Node);
  return undefined;
}

const LOGGER_NAME = /^(log|logger|.*(Log|Logger))$/;

function isLogger(receiver: Node): boolean {
  const name = lastName(receiver);
  return (
    name !== undefined &&
    (LOGGER_NAME.test(name) || (bare(receiver).type === 'CallExpression' && name === 'child'))
  );
}

function keyName(property: Node): string | undefined {
  if (property.computed) return undefined;
  const key = property.key as Node;
  if (key.type === 'Identifier') return key.name as string;
  if (key.type === 'Literal' && typeof key.value === 'string') return key.value;
  return undefined;
}

/** The literal strings an event value can be (`'a.b'`, `x ? 'a.b' : 'a.c'`), or none when computed. */
function literals(node: Node): string[] {
  const n = bare(node);
  if (n.type === 'Literal' && typeof n.value === 'string') return [n.value];
  if (n.type === 'ConditionalExpression')
    return [...literals(n.consequent as Node), ...literals(n.alternate as Node)];
  return [];
}

/** A `const`/`let` declared in an enclosing block or function (parameters included), by name. */
function declaration(name: string, ancestors: readonly Node[]): Node | 'parameter' | undefined {
  for (let i = ancestors.length - 1; i >= 0; i--) {
    const scope = ancestors[i] as Node;
    const params = (scope.params ?? []) as Node[];
    if (params.some((p) => bare(p).type === 'Identifier' && bare(p).name === name)) return 'parameter';
    const body = Array.isArray(scope.body) ? (scope.body as Node[]) : [];
    for (const statement of body) {
      if (statement.type !== 'VariableDeclaration') continue;
      for (const d of statement.declarations as Node[]) {
        const id = d.id as Node;
        if (id.type === 'Identifier' && id.name === name && isNode(d.init)) return d.init;
      }
    }
  }
  return undefined;
}

/** The event names of a fields object, or undefined when it has no `event` the scan can see. */
function eventsOf(fields: Node, ancestors: readonly Node[], depth = 0): string[] | undefined {
  const n = bare(fields);
  if (depth > 4) return undefined;
  if (n.type === 'Identifier') {
    const init = declaration(n.name as string, ancestors);
    return init === undefined || init === 'parameter' ? undefined : eventsOf(init, ancestors, depth + 1);
  }
  if (n.type !== 'ObjectExpression') return undefined;
  // The last `event` wins, as in the object itself.
  let found: string[] | undefined;
  for (const p of n.properties as Node[]) {
    if (p.type === 'SpreadElement') found = eventsOf(p.argument as Node, ancestors, depth + 1) ?? found;
    else if (keyName(p) === 'event') found = literals(p.value as Node);
  }
  return found;
}

/** Every call of a logger level in one source file, and whether it keeps the contract. */
function scanLogCalls(file: string, source: string): LogCall[] {
  const parsed = parseSync(file, source, { lang: file.endsWith('.ts') ? 'ts' : 'js', sourceType: 'module' });
  if (parsed.errors.length > 0) throw new Error(`${file}: ${parsed.errors[0]?.message}`);
  const calls: LogCall[] = [];
  const visit = (node: Node, ancestors: Node[]) => {
    if (node.type === 'CallExpression') check(node, ancestors);
    ancestors.push(node);
    for (const child of children(node)) visit(child, ancestors);
    ancestors.pop();
  };
  const check = (node: Node, ancestors: readonly Node[]) => {
    const callee = bare(node.callee as Node);
    if (callee.type !== 'MemberExpression') return;
    const property = callee.property as Node;
    const level = callee.computed
      ? property.type === 'Literal'
        ? String(property.value)
        : undefined
      : (property.name as string);
    const receiver = callee.object as Node;
    const receiverText = source.slice(bare(receiver).start, bare(receiver).end);
    const at = {
      file,
      line: source.slice(0, node.start).split('\n').length,
      call: source.slice(node.start, Math.min(node.end, node.start + 100)).replace(/\s+/g, ' '),
    };
    // A level chosen at run time (`log[at](…)`, Bolt's bridge) is checked like any other on a logger.
    if (level === undefined ? !isLogger(receiver) : !LEVELS.has(level)) return;
    const notLogger = `${file}:${receiverText}`;
    if (notLogger in NOT_LOGGERS) {
      calls.push({ ...at, events: [], problem: undefined, allowedBy: notLogger });
      return;
    }
    if (!isLogger(receiver)) {
      calls.push({
        ...at,
        events: [],
        problem: `${receiverText} is not known: a logger, or add it to NOT_LOGGERS`,
      });
      return;
    }
    const first = (node.arguments as Node[])[0];
    const typed = first && bare(first).type === 'Identifier' ? `${file}:${bare(first).name}` : undefined;
    if (typed !== undefined && typed in TYPED_FIELDS) {
      calls.push({ ...at, events: [], problem: undefined, allowedBy: typed });
      return;
    }
    const events = first === undefined ? undefined : eventsOf(first, ancestors);
    const bad = events?.find((e) => !EVENT_NAME.test(e));
    const problem =
      events === undefined
        ? 'no event: the first argument is not an object with an event'
        : bad === undefined
          ? undefined
          : `event ${bad} is not area.verb`;
    calls.push({ ...at, events: events ?? [], problem });
  };
  visit(parsed.program as unknown as Node, []);
  return calls;
}

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      // Build output, dependencies, test helpers, and the browser's code (no pino there).
      if (!['node_modules', 'dist', 'test', 'browser'].includes(entry.name) && !entry.name.startsWith('.'))
        yield* sources(path);
    } else if (/\.(ts|mts|mjs)$/.test(entry.name) && !/\.(test|bench|d)\.ts$/.test(entry.name)) yield path;
  }
}

function scanTree(): LogCall[] {
  return ['apps', 'packages', 'workers'].flatMap((top) =>
    [...sources(join(ROOT, top))].flatMap((path) =>
      scanLogCalls(relative(ROOT, path), readFileSync(path, 'utf8')),
    ),
  );
}

describe('scanLogCalls', () => {
  const problems = (source: string) => scanLogCalls('x.ts', source).map((c) => c.problem);

  it('finds a logger call without an event however it is written', () => {
    expect(
      problems(`
        log.info({ channel }, 'a');
        this.#log
          // a comment in the way
          .warn(
            { err },
            'b',
          );
        options.logger.error('c');
        log.child({ channel }).debug({}, 'd');
        passLogger(jobId).fatal(fields, 'e');
        this.#options.log?.info({ 'event ': 'x.y' });
      `),
    ).toEqual(Array(6).fill('no event: the first argument is not an object with an event'));
  });

  it('accepts an event written in place, spread from fields declared above, or in a conditional', () => {
    const calls = scanLogCalls(
      'x.ts',
      `
      log.info({ event: 'ebb.started', url }, 'up');
      function f(kind) {
        const fields = { event: kind === 'a' ? 'message.deleted' : 'message.edited', channel };
        log.info(fields, 'changed');
        log.warn({ ...fields, memories } as object, 'changed too');
        if (x) { const other = { ...fields, event: 'message.resummarize_waiting' }; logger['warn'](other, 'w'); }
      }
    `,
    );
    expect(calls.map((c) => c.problem)).toEqual([undefined, undefined, undefined, undefined]);
    expect(calls.map((c) => c.events)).toEqual([
      ['ebb.started'],
      ['message.deleted', 'message.edited'],
      ['message.deleted', 'message.edited'],
      ['message.resummarize_waiting'],
    ]);
  });

  it('rejects an event not named area.verb, fields it cannot see, and a receiver it does not know', () => {
    expect(
      problems(`
        log.info({ event: 'Ebb is up' });
        function g(fields) { log.info(fields, 'from a parameter'); }
        log.info(describe(err), 'from a call');
        log[level]({ err }, 'at a level chosen at run time');
        reporter.warn({ event: 'a.b' });
        console.error('not a logger either');
      `),
    ).toEqual([
      'event Ebb is up is not area.verb',
      'no event: the first argument is not an object with an event',
      'no event: the first argument is not an object with an event',
      'no event: the first argument is not an object with an event',
      'reporter is not known: a logger, or add it to NOT_LOGGERS',
      'console is not known: a logger, or add it to NOT_LOGGERS',
    ]);
  });
});

describe('the tree', () => {
  const calls = scanTree();

  it('names an event on every log call', () => {
    expect(
      calls.filter((c) => c.problem !== undefined).map((c) => `${c.file}:${c.line} ${c.problem}: ${c.call}`),
    ).toEqual([]);
    // The scan sees the tree: the known calls of each kind are in it.
    expect(calls.length).toBeGreaterThan(100);
    expect(calls.flatMap((c) => c.events)).toEqual(
      expect.arrayContaining([
        'ebb.started',
        'ebb.stopped',
        'redis.reconnected',
        'worker.ready',
        'turn.failed',
      ]),
    );
  });

  it('uses every entry of its allow-lists, so none outlives its call', () => {
    const used = new Set(calls.map((c) => c.allowedBy));
    expect([...Object.keys(NOT_LOGGERS), ...Object.keys(TYPED_FIELDS)].filter((k) => !used.has(k))).toEqual(
      [],
    );
  });

  it('documents every event in the operations guide', () => {
    const readme = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const names = [...new Set(calls.flatMap((c) => c.events))].sort();
    expect(names.filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
  });
});
