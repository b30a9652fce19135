/**
 * `ebb compact KEY [--focus TEXT] [--config PATH]`: a manual pass of one channel, as `/compact` in the
 * channel would queue it (the background fraction, now, whatever the usage), through the queue the
 * bot and the workers use: BullMQ on `REDIS_URL` under `EBB_REDIS_PREFIX`. A worker (`ebb worker`,
 * or `ebb dev`) runs it. Exit codes: 0 with the job id (a new job, or the one already queued or
 * running for the channel); 1 when nothing was enqueued, with the reason.
 *
 * An embedded single-process deployment (no `DATABASE_URL`, or no Redis) runs its passes inside the
 * bot; there, `/compact` in the channel does this.
 */
import { DEFAULT_REDIS_URL, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import {
  ChannelCompactor,
  type CompactionLogEvent,
  type CompactionQueue,
  chatMessageTokens,
  focusProblem,
  TRUNCATION_MARKER,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import {
  BullmqCompactionQueue,
  createRedis,
  describeRedisUrl,
  isRedisReachable,
  waitForReady,
} from '@ebb/queue';
import { loadCompactorSettings } from '../status/channel-status.js';
import type { CommandIo } from './io.js';
import { readConfig, readEnv, type StoreCommandDeps, withStores } from './store-session.js';

export interface CompactArgs {
  /** The channel key (`slack:T1:C1`, `discord:G:C`, `web:abc`). */
  readonly channel: string;
  /** `--focus TEXT`: what the summary should dwell on. */
  readonly focus?: string | undefined;
  /** `--config PATH`; otherwise `EBB_CONFIG`, otherwise `./config.toml`. */
  readonly config?: string | undefined;
}

const EMBEDDED_HINT = 'An embedded deployment compacts inside the bot: run /compact in the channel.';

export async function compact(
  args: CompactArgs,
  io: CommandIo,
  deps: StoreCommandDeps = {},
): Promise<number> {
  const focus = args.focus?.trim() || undefined;
  const problem = focus === undefined ? undefined : focusProblem(focus);
  if (problem !== undefined) {
    io.err(`ebb compact: --focus: ${problem}`);
    return 1;
  }
  const command = 'ebb compact';
  const config = await readConfig(command, args.config, io, deps);
  if (typeof config === 'number') return config;
  // Never the embedded database: its passes run in the bot's own process, which no Redis job reaches.
  const env = readEnv(command, io, deps);
  if (typeof env === 'number') return env;
  if (env.DATABASE_URL === undefined && deps.database === undefined) {
    io.err(`${command}: DATABASE_URL is not set, so Ebb runs on its embedded database. ${EMBEDDED_HINT}`);
    return 1;
  }
  return withStores({ command, embeddedHint: EMBEDDED_HINT }, io, deps, async (session) => {
    const key = args.channel;
    const context = await session.channels.loadContext(key);
    if (context.headSeq === 0) {
      io.err(`ebb compact: no channel ${key} in the database (no message of it was ever stored).`);
      io.err('`ebb status` lists the channels.');
      return 1;
    }

    const redisUrl = session.env.REDIS_URL ?? DEFAULT_REDIS_URL;
    if (!(await isRedisReachable(redisUrl, 2_000))) {
      io.err(
        `ebb compact: no Redis answers at ${describeRedisUrl(redisUrl)} (REDIS_URL), so no pass can be queued.`,
      );
      io.err(EMBEDDED_HINT);
      return 1;
    }
    const producer = createRedis(redisUrl, { role: 'producer', connectionName: 'ebb-compact' });
    let queue: BullmqCompactionQueue | undefined;
    try {
      // BullMQ reads the server's version as the queue is built: the connection must be ready first.
      await waitForReady(producer);
      queue = new BullmqCompactionQueue({ connection: producer, prefix: session.env.EBB_REDIS_PREFIX });
      const events: CompactionLogEvent[] = [];
      // The compactor turns a failed enqueue into a `queue_unavailable` skip; keep the error to show it.
      let failure: unknown;
      const bullmq = queue;
      const recording: CompactionQueue = {
        enqueue: (job) =>
          bullmq.enqueue(job).catch((err: unknown) => {
            failure = err;
            throw err;
          }),
        inFlight: (channelKey) => bullmq.inFlight(channelKey),
        jobState: (jobId) => bullmq.jobState(jobId),
        close: () => bullmq.close(),
      };
      const compactor = new ChannelCompactor({
        channels: session.channels,
        runs: session.runs,
        queue: recording,
        // Only an emergency truncation uses it; a manual pass never truncates.
        markerTokens: chatMessageTokens(await loadTokenizer('o200k_base'), TRUNCATION_MARKER),
        onEvent: (event) => events.push(event),
      });
      const settings = resolveChannel(config, key);
      const result = await compactor.compactNow(
        {
          channelKey: key,
          settings: await loadCompactorSettings(settings),
          calibration: await session.channels.calibration(key),
        },
        context,
        focus,
      );
      const last = events.at(-1);
      if (result.reason === 'in_flight') {
        io.out(`A pass of ${key} is already queued or running: ${last?.jobId ?? '(unknown job)'}`);
        if (focus !== undefined)
          io.out('It runs without the focus; run this again once it is done to add one.');
        return 0;
      }
      if (result.jobId !== undefined) {
        const range = last?.fromSeq === undefined ? '' : ` (messages #${last.fromSeq}–#${last.toSeq})`;
        io.out(
          `Compaction of ${key} queued${range}${focus === undefined ? '' : `, focus: ${focus}`}: ${result.jobId}`,
        );
        return 0;
      }
      io.err(
        `ebb compact: nothing enqueued for ${key}: ${explainReason(result.reason, last, failure, settings)}`,
      );
      return 1;
    } finally {
      await queue?.close();
      if (producer.status === 'ready') await producer.quit();
      else producer.disconnect();
    }
  });
}

function explainReason(
  reason: string | undefined,
  last: CompactionLogEvent | undefined,
  failure: unknown,
  settings: ResolvedChannelConfig,
): string {
  switch (reason) {
    case 'empty':
      return 'its context is empty.';
    case 'all_protected':
      return (
        `every message in its context is among the ${settings.compaction.protectRecent} newest, ` +
        'which are never compacted (compaction.protect_recent).'
      );
    case 'nothing_to_free':
      return (
        `the messages a pass may take (all but the ${settings.compaction.protectRecent} newest) hold no more than ` +
        `a summary of up to ${settings.compaction.summaryMaxTokens} tokens, so summarizing them would not make ` +
        'the context smaller; it will once more messages have come in.'
      );
    case 'queue_unavailable':
      // The queue threw (`failure`), or recording the run after the enqueue did (its code in the event).
      return failure instanceof Error
        ? `the queue refused the job: ${failure.message}`
        : `its run could not be recorded (${last?.error ?? 'unknown error'}); the job may be queued anyway.`;
    default:
      return reason ?? 'no reason given.';
  }
}
