/**
 * What `ebb help`, `ebb help <command>` and `ebb <command> --help` print: one usage block per
 * command, all of them for `ebb help`. Deciding which blocks a command line asks for is a pure
 * function of its words (`helpRequest`), answered before any command's module loads.
 */
import { DEFAULT_JOB_LATENCY } from '../commands/simulate-defaults.js';

export interface CommandUsage {
  /** The words that name the command: `config check`. */
  readonly name: string;
  /** Other names of the same command (`forget` for `memories forget`). */
  readonly aliases: readonly string[];
  /** The command line after `ebb `; further lines are continuations, indented under the first. */
  readonly synopsis: readonly string[];
  /** What it does, wrapped to fit 100 columns. */
  readonly description: readonly string[];
}

/** Every command, in the order `ebb help` lists them. */
export const COMMAND_USAGES: readonly CommandUsage[] = [
  {
    name: 'dev',
    aliases: [],
    synopsis: ['dev [--config PATH]'],
    description: ['Run the bot and a compaction worker in one process (what npm start runs).'],
  },
  {
    name: 'start',
    aliases: [],
    synopsis: ['start [--config PATH]'],
    description: [
      'Run the bot; compaction passes run in `ebb worker` processes (or in-process when embedded).',
    ],
  },
  {
    name: 'config check',
    aliases: [],
    synopsis: ['config check [--config PATH] [--channel KEY]'],
    description: [
      'Validate config.toml and print the resolved settings of one channel, where the web server',
      'listens and whether EBB_ADMIN_TOKEN is set.',
    ],
  },
  {
    name: 'simulate',
    aliases: [],
    synopsis: [
      'simulate TRANSCRIPT [--config PATH] [--channel KEY] [--job-latency N | --job-seconds S]',
      '         [--rate R] [--limit N] [--json]',
      'simulate --from-archive KEY [--since DURATION] [--suggest] [--job-seconds S] [--config PATH]',
      '         [--json] [--embedded]',
    ],
    description: [
      'Replay a JSON Lines transcript through the compaction core and print a timeline, a usage',
      `chart and totals. Passes take N turns (default ${DEFAULT_JOB_LATENCY}) or S seconds of the`,
      "transcript's clock; --rate re-times the transcript to R messages a second; --limit stops",
      "after N messages. --from-archive replays a channel's archived traffic from DATABASE_URL",
      "(KEY may be a glob), passes taking what the channel's recorded passes took; --suggest",
      'searches its thresholds, fractions, protect_recent and cooldown for 0 emergencies at the',
      'lowest cost and prints a [channels."KEY".compaction] block.',
    ],
  },
  {
    name: 'transcript',
    aliases: [],
    synopsis: ['transcript [--messages N] [--seed S] [--tools [--log-pastes]]'],
    description: [
      'Print a synthetic team-chat transcript (prose, code, JSON tool output, log pastes); --tools',
      "adds the bot's tool turns (calls, then JSON results, build logs and runbooks) and leaves the",
      "users' long log pastes out unless --log-pastes.",
    ],
  },
  {
    name: 'demo',
    aliases: [],
    synopsis: ['demo [--config PATH] [--messages N]'],
    description: ['Generate a transcript and simulate it: the compaction cycle at a glance.'],
  },
  {
    name: 'status',
    aliases: [],
    synopsis: ['status [--channel KEY] [--json] [--config PATH] [--embedded]'],
    description: [
      'Per channel: usage against its own thresholds, tokens, spans, recent passes, memories; with',
      '--channel also each setting and where it came from. Reads DATABASE_URL, or the embedded',
      'database when no running Ebb holds it (--embedded is taken and changes nothing).',
    ],
  },
  {
    name: 'compact',
    aliases: [],
    synopsis: ['compact KEY [--focus TEXT] [--config PATH]'],
    description: ['Queue a manual compaction pass of a channel on Redis (REDIS_URL); a worker runs it.'],
  },
  {
    name: 'memories list',
    aliases: [],
    synopsis: ['memories list [--channel KEY] [--speaker NAME] [--json] [--embedded]'],
    description: ['List memories. KEY may be a glob: "slack:T1:C1*" is the channel and its threads.'],
  },
  {
    name: 'memories forget',
    aliases: ['forget'],
    synopsis: [
      'memories forget (--id ID... | [--channel KEY] [--speaker NAME] [--match TEXT] [--archive])',
      '                [--yes] [--config PATH] [--embedded]',
    ],
    description: [
      'Forget: delete the memories, summarize again the summaries that hold their source messages',
      "(or the speaker's messages and the bot's replies to them, or every message holding TEXT,",
      "the bot's replies included) with",
      'those redacted, and clear them from checkpoints; --archive (with --speaker or --match) also',
      'overwrites those archived messages. Without --yes, print what would change and exit 2.',
      '`ebb forget ...` is the same command.',
    ],
  },
  {
    name: 'migrate',
    aliases: [],
    synopsis: ['migrate'],
    description: ['Apply the database migrations to DATABASE_URL (or the embedded database).'],
  },
  {
    name: 'worker',
    aliases: [],
    synopsis: ['worker [--config PATH] [--concurrency N]'],
    description: ['Run compaction passes from the Redis queue against Postgres until SIGTERM.'],
  },
  {
    name: 'help',
    aliases: [],
    synopsis: ['help [COMMAND]'],
    description: ["Show this text, or one command's (also `ebb COMMAND --help`)."],
  },
];

/** What a command line asks of the help. */
export type HelpRequest =
  /** Not a help request: run the command. */
  | { readonly kind: 'none' }
  /** `ebb help`, `ebb --help`, `ebb -h`. */
  | { readonly kind: 'all' }
  /** `ebb help config`, `ebb worker --help`: the blocks of the commands named. */
  | { readonly kind: 'commands'; readonly usages: readonly CommandUsage[] }
  /** Help for a command that does not exist. */
  | { readonly kind: 'unknown'; readonly name: string };

const HELP_FLAGS: ReadonlySet<string> = new Set(['--help', '-h']);

/**
 * Which help, if any, the command line asks for: `ebb help [COMMAND]`, `ebb --help`, or `--help` /
 * `-h` anywhere among a command's options (not after `--`; a string option never takes `-h` as its
 * value, so a help flag is always the flag).
 */
export function helpRequest(argv: readonly string[]): HelpRequest {
  const [first, ...rest] = argv;
  if (first === undefined) return { kind: 'none' };
  if (first === 'help' || HELP_FLAGS.has(first)) {
    const words = rest.filter((arg) => !HELP_FLAGS.has(arg));
    if (words.length > 0) return lookUp(words);
    // `ebb help --help`: the help command's own usage.
    return first === 'help' && rest.length > 0 ? lookUp(['help']) : { kind: 'all' };
  }
  const end = argv.indexOf('--');
  const options = end === -1 ? argv : argv.slice(0, end);
  return options.some((arg) => HELP_FLAGS.has(arg)) ? lookUp(argv) : { kind: 'none' };
}

/**
 * The commands the leading words name: two words (`config check`), else one (`worker`, `forget`),
 * else every command the word begins (`config`, `memories`).
 */
export function commandsNamed(words: readonly string[]): readonly CommandUsage[] {
  const [first = '', second] = words;
  const names = (u: CommandUsage) => [u.name, ...u.aliases];
  const two = COMMAND_USAGES.filter((u) => second !== undefined && names(u).includes(`${first} ${second}`));
  if (two.length > 0) return two;
  const one = COMMAND_USAGES.filter((u) => names(u).includes(first));
  if (one.length > 0) return one;
  return COMMAND_USAGES.filter((u) => u.name.startsWith(`${first} `));
}

function lookUp(words: readonly string[]): HelpRequest {
  const usages = commandsNamed(words);
  return usages.length > 0 ? { kind: 'commands', usages } : { kind: 'unknown', name: words[0] ?? '' };
}

/** `ebb help`: every command. */
export function usageText(): string {
  const blocks = COMMAND_USAGES.map((u) =>
    [...u.synopsis.map((line) => `  ${line}`), ...u.description.map((line) => `      ${line}`)].join('\n'),
  );
  return ['Usage: ebb <command> [options]', '', 'Commands:', ...blocks].join('\n');
}

/** `ebb help <command>`, `ebb <command> --help`: the blocks of those commands. */
export function commandUsageText(usages: readonly CommandUsage[]): string {
  const prefix = 'Usage: ebb ';
  return usages
    .map((u) => {
      const [head = '', ...continued] = u.synopsis;
      return [
        prefix + head,
        ...continued.map((line) => ' '.repeat(prefix.length) + line),
        '',
        ...u.description.map((line) => `  ${line}`),
      ].join('\n');
    })
    .join('\n\n');
}
