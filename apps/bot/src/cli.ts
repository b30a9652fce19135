/**
 * The `ebb` command line. Each command is a function of parsed arguments and an output sink that
 * returns an exit code; this file only routes and parses.
 */
import { parseArgs } from 'node:util';
import { type CommandIo, processIo } from './commands/io.js';
import {
  compact,
  configCheck,
  DEFAULT_JOB_LATENCY,
  demo,
  memoriesForget,
  memoriesList,
  migrate,
  run,
  simulate,
  status,
  transcript,
  worker,
} from './commands/lazy.js';

const USAGE = `Usage: ebb <command> [options]

Commands:
  dev [--config PATH]
      Run the bot and a compaction worker in one process (what npm start runs).
  start [--config PATH]
      Run the bot; compaction passes run in \`ebb worker\` processes (or in-process when embedded).
  config check [--config PATH] [--channel KEY]
      Validate config.toml and print the resolved settings of one channel.
  simulate TRANSCRIPT [--config PATH] [--channel KEY] [--job-latency N | --job-seconds S]
           [--rate R] [--limit N] [--json]
      Replay a JSON Lines transcript through the compaction core and print a timeline, a usage
      chart and totals. Passes take N turns (default ${DEFAULT_JOB_LATENCY}) or S seconds of the
      transcript's clock; --rate re-times the transcript to R messages a second; --limit stops
      after N messages.
  transcript [--messages N] [--seed S] [--tools [--log-pastes]]
      Print a synthetic team-chat transcript (prose, code, JSON tool output, log pastes); --tools
      adds the bot's tool turns (calls, then JSON results, build logs and runbooks) and leaves the
      users' long log pastes out unless --log-pastes.
  demo [--config PATH] [--messages N]
      Generate a transcript and simulate it: the compaction cycle at a glance.
  status [--channel KEY] [--json] [--config PATH] [--embedded]
      Per channel: usage against its own thresholds, tokens, spans, recent passes, memories; with
      --channel also each setting and where it came from. Reads DATABASE_URL (--embedded: the
      embedded database, only while Ebb is stopped).
  compact KEY [--focus TEXT] [--config PATH]
      Queue a manual compaction pass of a channel on Redis (REDIS_URL); a worker runs it.
  memories list [--channel KEY] [--speaker NAME] [--json] [--embedded]
      List memories. KEY may be a glob: "slack:T1:C1*" is the channel and its threads.
  memories forget (--id ID... | [--channel KEY] [--speaker NAME] [--match TEXT] [--archive]) [--yes] [--config PATH] [--embedded]
      Forget: delete the memories, summarize again the summaries that hold their source messages
      (or the speaker's messages, or every message holding TEXT, the bot's replies included) with
      those redacted, and clear them from checkpoints; --archive (with --speaker or --match) also
      overwrites those archived messages. Without --yes, print what would change and exit 2.
      \`ebb forget ...\` is the same command.
  migrate
      Apply the database migrations to DATABASE_URL (or the embedded database).
  worker [--config PATH] [--concurrency N]
      Run compaction passes from the Redis queue against Postgres until SIGTERM.
  help
      Show this text.`;

/** `ebb memories forget ...` and its short form `ebb forget ...`. */
function forget(args: readonly string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      id: { type: 'string', multiple: true },
      channel: { type: 'string' },
      speaker: { type: 'string' },
      match: { type: 'string' },
      archive: { type: 'boolean' },
      yes: { type: 'boolean' },
      config: { type: 'string' },
      embedded: { type: 'boolean' },
    },
    strict: true,
  });
  const { id, ...filters } = values;
  return memoriesForget({ ...filters, ids: id }, io);
}

export async function main(argv: readonly string[], io: CommandIo = processIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'config': {
        const [sub, ...args] = rest;
        if (sub !== 'check') return usage(io, `unknown command: config ${sub ?? ''}`.trim());
        const { values } = parseArgs({
          args,
          options: { config: { type: 'string' }, channel: { type: 'string' } },
          strict: true,
        });
        return await configCheck(values, io);
      }
      case 'simulate': {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            config: { type: 'string' },
            channel: { type: 'string' },
            'job-latency': { type: 'string' },
            'job-seconds': { type: 'string' },
            rate: { type: 'string' },
            limit: { type: 'string' },
            json: { type: 'boolean' },
          },
          strict: true,
        });
        const [file, ...extra] = positionals;
        if (file === undefined || extra.length > 0) return usage(io, 'simulate takes one TRANSCRIPT file');
        const jobLatency =
          values['job-latency'] === undefined ? undefined : wholeNumber(values['job-latency']);
        if (jobLatency === null) return usage(io, '--job-latency takes a whole number of turns');
        const jobSeconds =
          values['job-seconds'] === undefined ? undefined : positiveNumber(values['job-seconds'], true);
        if (jobSeconds === null) return usage(io, '--job-seconds takes a number of seconds (0 or more)');
        if (jobSeconds !== undefined && jobLatency !== undefined)
          return usage(io, 'give --job-latency or --job-seconds, not both');
        const rate = values.rate === undefined ? undefined : positiveNumber(values.rate, false);
        if (rate === null) return usage(io, '--rate takes a number of messages a second above 0');
        const limit = values.limit === undefined ? undefined : wholeNumber(values.limit);
        if (limit === null) return usage(io, '--limit takes a whole number of messages');
        return await simulate(
          {
            transcript: file,
            ...(values.config === undefined ? {} : { config: values.config }),
            ...(values.channel === undefined ? {} : { channel: values.channel }),
            ...(jobLatency === undefined ? {} : { jobLatency }),
            ...(jobSeconds === undefined ? {} : { jobSeconds }),
            ...(rate === undefined ? {} : { rate }),
            ...(limit === undefined ? {} : { limit }),
            json: values.json ?? false,
          },
          io,
        );
      }
      case 'transcript': {
        const { values } = parseArgs({
          args: rest,
          options: {
            messages: { type: 'string' },
            seed: { type: 'string' },
            tools: { type: 'boolean' },
            'log-pastes': { type: 'boolean' },
          },
          strict: true,
        });
        const messages = wholeNumber(values.messages ?? '20000');
        const seed = wholeNumber(values.seed ?? '1');
        if (messages === null || seed === null) return usage(io, '--messages and --seed take whole numbers');
        const logPastes = values['log-pastes'];
        return transcript(
          { messages, seed, tools: values.tools ?? false, ...(logPastes === undefined ? {} : { logPastes }) },
          io,
        );
      }
      case 'demo': {
        const { values } = parseArgs({
          args: rest,
          options: { config: { type: 'string' }, messages: { type: 'string' } },
          strict: true,
        });
        const messages = wholeNumber(values.messages ?? '20000');
        if (messages === null) return usage(io, '--messages takes a whole number');
        return await demo(
          { messages, ...(values.config === undefined ? {} : { config: values.config }) },
          io,
        );
      }
      case 'dev':
      case 'start': {
        const { values } = parseArgs({ args: rest, options: { config: { type: 'string' } }, strict: true });
        return await run(
          {
            ...(values.config === undefined ? {} : { config: values.config }),
            withWorker: command === 'dev',
          },
          io,
        );
      }
      case 'status': {
        const { values } = parseArgs({
          args: rest,
          options: {
            channel: { type: 'string' },
            json: { type: 'boolean' },
            config: { type: 'string' },
            embedded: { type: 'boolean' },
          },
          strict: true,
        });
        return await status(values, io);
      }
      case 'compact': {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: { focus: { type: 'string' }, config: { type: 'string' } },
          strict: true,
        });
        const [channel, ...extra] = positionals;
        if (channel === undefined || extra.length > 0) return usage(io, 'compact takes one channel KEY');
        return await compact({ channel, ...values }, io);
      }
      case 'memories': {
        const [sub, ...args] = rest;
        switch (sub) {
          case 'list': {
            const { values } = parseArgs({
              args,
              options: {
                channel: { type: 'string' },
                speaker: { type: 'string' },
                json: { type: 'boolean' },
                embedded: { type: 'boolean' },
              },
              strict: true,
            });
            return await memoriesList(values, io);
          }
          case 'forget':
            return await forget(args, io);
          default:
            return usage(io, `unknown command: memories ${sub ?? ''}`.trim());
        }
      }
      case 'forget':
        return await forget(rest, io);
      case 'migrate':
        parseArgs({ args: rest, options: {}, strict: true });
        return await migrate(io);
      case 'worker': {
        const { values } = parseArgs({
          args: rest,
          options: { config: { type: 'string' }, concurrency: { type: 'string' } },
          strict: true,
        });
        const concurrency = values.concurrency === undefined ? undefined : wholeNumber(values.concurrency);
        if (concurrency === null || concurrency === 0)
          return usage(io, '--concurrency takes a whole number above 0');
        return await worker(
          {
            ...(values.config === undefined ? {} : { config: values.config }),
            ...(concurrency === undefined ? {} : { concurrency }),
          },
          io,
        );
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.out(USAGE);
        return command === undefined ? 1 : 0;
      default:
        return usage(io, `unknown command: ${command}`);
    }
  } catch (err) {
    // parseArgs reports unknown options with a readable message.
    if (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')) {
      return usage(io, err.message);
    }
    throw err;
  }
}

function usage(io: CommandIo, problem: string): number {
  io.err(`ebb: ${problem}\n\n${USAGE}`);
  return 2;
}

function wholeNumber(text: string): number | null {
  return /^\d+$/.test(text) ? Number(text) : null;
}

/** A decimal number above 0 (or at least 0 with `zeroAllowed`); null when the text is not one. */
function positiveNumber(text: string, zeroAllowed: boolean): number | null {
  if (!/^\d+(\.\d+)?$/.test(text)) return null;
  const n = Number(text);
  return n > 0 || (zeroAllowed && n === 0) ? n : null;
}
