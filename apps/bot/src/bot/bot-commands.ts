/**
 * The bot's slash commands, run in the channel's actor: `/context` reports usage against the
 * thresholds, the last passes and the memories; `/compact [focus]` (admins only) queues a pass now.
 */
import { type EbbConfig, resolveChannel } from '@ebb/config';
import {
  type CommandInvocation,
  type ContextView,
  focusProblem,
  type MemoryStore,
  memoryScope,
  type RunStore,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import { describeChannel } from '../status/channel-status.js';
import type { BotCompaction } from './bot-compaction.js';
import type { ChannelStates } from './channel-states.js';
import { contextReport } from './context-report.js';

/** Passes `/context` lists. */
const CONTEXT_PASSES = 3;

export interface BotCommandsOptions {
  readonly config: () => EbbConfig;
  /** The last passes `/context` lists. */
  readonly runs: Pick<RunStore, 'recent'>;
  readonly memories: MemoryStore;
  readonly states: ChannelStates;
  readonly compaction: BotCompaction;
}

export class BotCommands {
  readonly #options: BotCommandsOptions;

  constructor(options: BotCommandsOptions) {
    this.#options = options;
  }

  /** The command's answer, as text for the channel. */
  async run(command: CommandInvocation): Promise<string> {
    const { compaction } = this.#options;
    const key = command.channelKey;
    const config = this.#options.config();
    const settings = resolveChannel(config, key);
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    const state = await this.#options.states.get(key);
    const compactorSettings = compaction.settingsOf(settings, tokenizer);
    switch (command.name) {
      case 'context': {
        // The same status `ebb status` and the dashboard show, from the bot's live context.
        const view = state.context.view();
        const scope = memoryScope(key, settings.memory.scope);
        const [runs, count] = await Promise.all([
          this.#options.runs.recent(key, CONTEXT_PASSES),
          this.#options.memories.count({ scope }),
        ]);
        return contextReport(
          describeChannel({
            summary: { key, headSeq: view.headSeq, generation: view.generation, tokens: view.tokens },
            spans: view.spans,
            settings,
            compactor: compactorSettings,
            calibration: state.calibration,
            runs,
            memories: { scope, count },
            prices: config.prices,
            settingRows: null,
          }),
          { stubbedInContext: stubbedResults(view) },
        );
      }
      case 'compact': {
        const admins = command.platform === 'web' ? undefined : config[command.platform].admins;
        if (admins && !admins.includes(command.userId))
          return 'Only the admins configured for this workspace can run /compact.';
        const focus = command.args.trim();
        // Past the limit the job payload would be refused: say why, instead of `queue_unavailable`.
        const problem = focusProblem(focus);
        if (problem) return problem;
        const result = await compaction.compactor.compactNow(
          { channelKey: key, settings: compactorSettings, calibration: state.calibration },
          state.context.view(),
          focus || undefined,
        );
        return result.jobId
          ? `Compaction queued${focus ? ` (focus: ${focus})` : ''}: ${result.jobId}`
          : result.reason === 'in_flight'
            ? 'A compaction pass of this channel is already queued or running; try again when it is done.'
            : `Nothing to compact right now (${result.reason ?? 'no reason'}).`;
      }
    }
  }
}

/** Raw tool results of the context that microcompaction stubbed (from its index of tool results). */
function stubbedResults(view: ContextView): number {
  const first = view.raw[0]?.seq ?? 0;
  const seqs = view.toolResultSeqs ?? [];
  return seqs.filter((seq) => view.raw[seq - first]?.stubbed === true).length;
}
