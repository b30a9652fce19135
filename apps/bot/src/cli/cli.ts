/**
 * The `ebb` command line. Each command is a function of parsed arguments and an output sink that
 * returns an exit code; this file only routes and parses.
 */
import { parseArgs } from 'node:util';
import { EBB_VERSION } from '@ebb/observability/version';
import { type CommandIo, processIo } from '../commands/io.js';
import {
  compact,
  configCheck,
  demo,
  memoriesForget,
  memoriesList,
  migrate,
  run,
  simulate,
  simulateArchive,
  status,
  transcript,
  worker,
} from '../commands/lazy.js';
import { commandsNamed, commandUsageText, helpRequest, usageText } from './cli-usage.js';

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
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    io.out(`ebb ${EBB_VERSION}`);
    return 0;
  }
  // Help is answered from the words alone, before any command parses, loads or starts anything.
  const help = helpRequest(argv);
  switch (help.kind) {
    case 'all':
      io.out(usageText());
      return 0;
    case 'commands':
      io.out(commandUsageText(help.usages));
      return 0;
    case 'unknown':
      return usage(io, [], `unknown command: ${help.name}`);
    case 'none':
      break;
  }
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'config': {
        const [sub, ...args] = rest;
        if (sub !== 'check') return usage(io, argv, `unknown command: config ${sub ?? ''}`.trim());
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
            'from-archive': { type: 'string' },
            since: { type: 'string' },
            suggest: { type: 'boolean' },
            embedded: { type: 'boolean' },
          },
          strict: true,
        });
        const fromArchive = values['from-archive'];
        if (fromArchive !== undefined)
          return await simulateFromArchive(fromArchive, values, positionals, argv, io);
        if (values.since !== undefined || values.suggest || values.embedded)
          return usage(io, argv, '--since, --suggest and --embedded go with --from-archive KEY');
        const [file, ...extra] = positionals;
        if (file === undefined || extra.length > 0)
          return usage(io, argv, 'simulate takes one TRANSCRIPT file');
        const jobLatency =
          values['job-latency'] === undefined ? undefined : wholeNumber(values['job-latency']);
        if (jobLatency === null) return usage(io, argv, '--job-latency takes a whole number of turns');
        const jobSeconds =
          values['job-seconds'] === undefined ? undefined : positiveNumber(values['job-seconds'], true);
        if (jobSeconds === null)
          return usage(io, argv, '--job-seconds takes a number of seconds (0 or more)');
        if (jobSeconds !== undefined && jobLatency !== undefined)
          return usage(io, argv, 'give --job-latency or --job-seconds, not both');
        const rate = values.rate === undefined ? undefined : positiveNumber(values.rate, false);
        if (rate === null) return usage(io, argv, '--rate takes a number of messages a second above 0');
        const limit = values.limit === undefined ? undefined : wholeNumber(values.limit);
        if (limit === null) return usage(io, argv, '--limit takes a whole number of messages');
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
        if (messages === null || seed === null)
          return usage(io, argv, '--messages and --seed take whole numbers');
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
        if (messages === null) return usage(io, argv, '--messages takes a whole number');
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
        if (channel === undefined || extra.length > 0)
          return usage(io, argv, 'compact takes one channel KEY');
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
            return usage(io, argv, `unknown command: memories ${sub ?? ''}`.trim());
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
          return usage(io, argv, '--concurrency takes a whole number above 0');
        return await worker(
          {
            ...(values.config === undefined ? {} : { config: values.config }),
            ...(concurrency === undefined ? {} : { concurrency }),
          },
          io,
        );
      }
      case undefined:
        io.out(usageText());
        return 1;
      default:
        return usage(io, argv, `unknown command: ${command}`);
    }
  } catch (err) {
    // parseArgs reports unknown options with a readable message.
    if (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')) {
      return usage(io, argv, err.message);
    }
    throw err;
  }
}

/** `ebb simulate --from-archive KEY [--since DURATION] [--suggest] ...`. */
function simulateFromArchive(
  key: string,
  values: {
    since?: string | undefined;
    suggest?: boolean | undefined;
    json?: boolean | undefined;
    embedded?: boolean | undefined;
    config?: string | undefined;
    channel?: string | undefined;
    'job-seconds'?: string | undefined;
    'job-latency'?: string | undefined;
    rate?: string | undefined;
    limit?: string | undefined;
  },
  positionals: readonly string[],
  argv: readonly string[],
  io: CommandIo,
): Promise<number> | number {
  if (positionals.length > 0)
    return usage(io, argv, 'give a TRANSCRIPT file or --from-archive KEY, not both');
  if (
    values.channel !== undefined ||
    values['job-latency'] !== undefined ||
    values.rate !== undefined ||
    values.limit !== undefined
  )
    return usage(
      io,
      argv,
      '--from-archive replays the channel as archived: --channel, --job-latency, --rate and --limit do not apply',
    );
  const sinceMs = values.since === undefined ? undefined : durationMs(values.since);
  if (sinceMs === null) return usage(io, argv, '--since takes a duration: 90m, 12h, 7d, 2w');
  const jobSeconds =
    values['job-seconds'] === undefined ? undefined : positiveNumber(values['job-seconds'], true);
  if (jobSeconds === null) return usage(io, argv, '--job-seconds takes a number of seconds (0 or more)');
  return simulateArchive(
    {
      fromArchive: key,
      ...(sinceMs === undefined ? {} : { sinceMs }),
      ...(values.config === undefined ? {} : { config: values.config }),
      ...(jobSeconds === undefined ? {} : { jobSeconds }),
      suggest: values.suggest ?? false,
      json: values.json ?? false,
      embedded: values.embedded ?? false,
    },
    io,
  );
}

const DURATION_UNITS: Readonly<Record<string, number>> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** `90m`, `12h`, `7d`, `2w` in milliseconds; null when the text is not one. */
function durationMs(text: string): number | null {
  const match = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(text);
  const unit = match?.[2] === undefined ? undefined : DURATION_UNITS[match[2]];
  return match === null || unit === undefined || Number(match[1]) <= 0 ? null : Number(match[1]) * unit;
}

/** A command line Ebb cannot run: the problem, then the usage of the command it names (or of all). */
function usage(io: CommandIo, argv: readonly string[], problem: string): number {
  const usages = argv.length === 0 ? [] : commandsNamed(argv);
  io.err(`ebb: ${problem}\n\n${usages.length > 0 ? commandUsageText(usages) : usageText()}`);
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
