/**
 * Asking the model for a channel's reply: memories of the channel's scope recalled within their
 * budget, the prompt rendered from the working context (with a typing indicator), the calibration
 * learned from the provider's prompt count, and a provider context overflow answered by truncating
 * and asking again.
 *
 * The tool loop: the model is offered the tools the channel's `[tools] allow` lets it use. When it
 * answers with tool calls, they run (at once, each bounded by `call_timeout_seconds`; a failure is
 * a result the model reads), then the bot's message with the calls and one `tool` message per call
 * are archived in order, and only then the compaction monitor runs (never between a call and its
 * results), so a huge result is stubbed or compacted before the model is asked again. The
 * `max_steps`-th call of a turn offers no tools, so the turn ends in words; only those are posted.
 */
import {
  type ChatModel,
  type ChatReply,
  calibrate,
  chatMessageTokens,
  costUsd,
  type Logger,
  type Memory,
  type MemoryStore,
  memoryScope,
  type PromptPin,
  pinContext,
  promptIsCold,
  RECALL_MIN_SHARED_TERMS,
  relevanceTo,
  renderContext,
  renderMemories,
  type ToolCall,
  type ToolSpec,
  type TurnLog,
  type UsageStore,
  WorkingContext,
} from '@ebb/core';
import { isLlmError } from '@ebb/llm';
import type { ToolCallSample } from '@ebb/observability';
import { type ChannelTools, loggedToolText, type Toolbox, type ToolCallReport } from '@ebb/tools';
import type { BotCompaction } from './bot-compaction.js';
import type { AppendedMessage, ChannelStates } from './channel-states.js';
import type { Turn } from './turn.js';

/** Provider overflows in a row that the bot answers by truncating again before it gives up. */
const MAX_OVERFLOW_RETRIES = 2;
const RECALL_CANDIDATES = 20;
/** Calibration is kept in memory and saved to the channel row every this many replies. */
const CALIBRATION_SAVE_EVERY = 10;
/** Said when the model still asks for tools on the call that offers none (a provider that ignores that). */
export const STEP_LIMIT_REPLY =
  'I looked things up but ran out of steps before I could finish; ask me again to continue where I stopped.';
/** The longest tool name a log line or metric label takes (the model may send anything). */
const MAX_LOGGED_NAME = 64;

/** The model's reply, and the memories recalled into the prompt it answered (its provenance). */
export interface ModelAnswer {
  readonly text: string;
  readonly recalledMemories: readonly string[];
}

export interface ModelReplierOptions {
  readonly channels: Pick<TurnLog, 'setCalibration'>;
  readonly memories: MemoryStore;
  /** The model that answers in a channel (channels may use different models), or the one named. */
  readonly chatModel: (channelKey: string, model?: string) => ChatModel;
  readonly compaction: BotCompaction;
  /** Where the tool loop archives the calls and their results, as every other message. */
  readonly states: ChannelStates;
  /** The tools channels may be allowed; without it the model is offered none. */
  readonly toolbox?: Toolbox;
  /** Names the bot's messages in the archive. */
  readonly botName: string;
  /**
   * Aborted when the bot stops: tool calls in flight are cancelled (a result the model reads) and
   * the next model call offers no tools, so the turn ends in words at once.
   */
  readonly stopping?: AbortSignal;
  readonly onToolCall?: (sample: ToolCallSample) => void;
  /** Where each answered turn's tokens are recorded (off the turn's path: a failure is only logged). */
  readonly usage?: UsageStore;
  /** The clock tool steps are stamped by and a channel's silence measured on (default `Date.now`). */
  readonly now?: () => number;
}

/** What a turn's model calls took, all steps together: for the turn's log line and the usage record. */
interface TurnUsage {
  readonly model: string;
  readonly calls: number;
  readonly promptTokens: number;
  /** The part of `promptTokens` the provider served from its prompt cache. */
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** The turn's first prompt came after a silence longer than the channel's cache lifetime (`promptIsCold`). */
  readonly cold: boolean;
}

export class ModelReplier {
  readonly #options: ModelReplierOptions;
  readonly #now: () => number;

  constructor(options: ModelReplierOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The model's reply to `text`, the message archived under `seq`, after any tool calls it made; the
   * turn's state gets the calibration learned, any truncation made and the tool steps archived. Each
   * prompt is pinned to the message (`pinContext`): what was archived after it, other than this
   * turn's tool steps, is not shown. `typing` shows the channel's typing indicator, before each model
   * call and each step's tool calls.
   */
  async reply(turn: Turn, text: string, seq: number, typing: () => void): Promise<ModelAnswer> {
    const { key, state, tokenizer, settings, log } = turn;
    const { compaction } = this.#options;
    const recalled = await this.#recall(turn, text, compaction.recallBudget(state, settings, tokenizer));
    compaction.recalled(key, recalled.tokens);
    // The reply's provenance: a take-back that drops one of these memories takes the reply back.
    const recalledMemories = recalled.memories.map((m) => m.id);
    const tools = this.#options.toolbox?.forChannel(key, settings.tools.allow);
    const offered = tools?.specs ?? [];
    const { stopping } = this.#options;
    const pin = { seq, steps: new Set<number>() };
    const usage = {
      // The model's own label: the offline responder is not the configured model.
      model: this.#options.chatModel(key, turn.model).label,
      calls: 0,
      promptTokens: 0,
      cachedTokens: 0,
      completionTokens: 0,
      cold: promptIsCold(state.context.view(), this.#now(), 1000 * settings.llm.cacheTtlSeconds),
    };
    for (let step = 1; ; step++) {
      const last =
        tools === undefined ||
        offered.length === 0 ||
        step >= settings.tools.maxSteps ||
        stopping?.aborted === true;
      const reply = await this.#ask(turn, { recalled, pin }, typing, last ? [] : offered);
      usage.calls += 1;
      usage.promptTokens += reply.promptTokens ?? 0;
      usage.cachedTokens += reply.cachedPromptTokens ?? 0;
      usage.completionTokens += reply.completionTokens ?? 0;
      const calls = reply.toolCalls ?? [];
      if (calls.length === 0 || last || tools === undefined) {
        const recorded = this.#account(turn, usage);
        // A limited channel's next turn reads this turn's spend: it is in the store before the reply goes.
        if (settings.budget.limited) await recorded;
        return { text: reply.text === '' ? STEP_LIMIT_REPLY : reply.text, recalledMemories };
      }
      typing();
      const reports = await Promise.all(
        calls.map((call) =>
          tools.call(call, {
            timeoutMs: settings.tools.callTimeoutMs,
            ...(stopping === undefined ? {} : { signal: stopping }),
          }),
        ),
      );
      reports.forEach((report, i) => {
        this.#report(calls[i] as ToolCall, report, tools, log);
      });
      // The calls and all their results go in together, in order; only then may the monitor cut.
      const ts = new Date(this.#now()).toISOString();
      const archived: AppendedMessage[] = [
        {
          role: 'assistant',
          author: this.#options.botName,
          text: reply.text,
          ts,
          toolCalls: calls,
          recalledMemories,
        },
        ...calls.map(
          (call, i): AppendedMessage => ({
            role: 'tool',
            author: call.name.slice(0, MAX_LOGGED_NAME),
            text: reports[i]?.outcome.text ?? '',
            ts,
            toolCallId: call.id,
          }),
        ),
      ];
      for (const stepSeq of await this.#options.states.appendAll(turn, archived)) pin.steps.add(stepSeq);
      await this.#options.compaction.monitor(turn);
    }
  }

  /**
   * One model call, with the calibration it teaches and a provider overflow answered by truncating:
   * the prompt is the context pinned to the turn's message, with the memories recalled for it.
   */
  async #ask(
    { key, state, tokenizer, settings, model }: Turn,
    { recalled, pin }: { readonly recalled: { memories: Memory[]; tokens: number }; readonly pin: PromptPin },
    typing: () => void,
    tools: readonly ToolSpec[],
  ): Promise<ChatReply> {
    const { compaction } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const context = pinContext(state.context.view(), pin);
      const messages = renderContext({
        systemPrompt: settings.bot.systemPrompt,
        memories: recalled.memories,
        context,
      });
      typing();
      try {
        const reply = await this.#options
          .chatModel(key, model)
          .reply(messages, tools.length === 0 ? { channelKey: key } : { tools, channelKey: key });
        // Another model (`[budget] cheaper_model`) may count otherwise: its counts teach the
        // channel's calibration nothing.
        if (reply.promptTokens && model === undefined) {
          // Against what was actually rendered (recalled memories rarely fill their budget), from
          // counts already made: the context's running total, the system prompt, the memories, and
          // the tool definitions (sent as JSON; the provider's own framing of them is learned here).
          const estimated =
            context.tokens +
            compaction.promptTokens(tokenizer, settings.bot.systemPrompt) +
            recalled.tokens +
            compaction.toolTokens(tokenizer, tools);
          state.calibration = calibrate(state.calibration, estimated, reply.promptTokens);
          if (state.calibration.samples % CALIBRATION_SAVE_EVERY === 0) {
            void this.#options.channels.setCalibration(key, state.calibration).catch(() => {});
          }
        }
        return reply;
      } catch (err) {
        if (!isLlmError(err, 'llm_context_overflow') || attempt >= MAX_OVERFLOW_RETRIES) throw err;
        // The provider counts more than we do: cut now, calibrate up, and try again.
        state.calibration = {
          factor: Math.min(2, state.calibration.factor * 1.1),
          samples: state.calibration.samples,
        };
        const after = await compaction.compactor.truncateNow(
          key,
          compaction.settingsOf(settings, tokenizer),
          state.calibration,
          1,
        );
        if (!after) throw err;
        state.context = new WorkingContext(after);
      }
    }
  }

  /**
   * The turn's `turn.answered` line (its tokens, the share the provider's prompt cache served, and
   * the cost at `[prices]`), and its usage record.
   */
  #account(turn: Turn, { cold, ...usage }: TurnUsage): Promise<void> | undefined {
    const { key, settings, log } = turn;
    if (usage.promptTokens + usage.completionTokens === 0) {
      // The offline responder, or a server that reports no usage: nothing to count or to price.
      log.info(
        { event: 'turn.answered', model: usage.model, calls: usage.calls, promptTokens: null, costUsd: null },
        `answered by ${usage.model} (no token counts)`,
      );
      return;
    }
    // `[llm] model`'s price; a turn on `[budget] cheaper_model` is priced where its usage is read.
    const price = turn.model === undefined ? settings.llm.price : undefined;
    const cost =
      price === undefined
        ? null
        : costUsd(
            { input: usage.promptTokens, cached: usage.cachedTokens, output: usage.completionTokens },
            price,
          );
    log.info(
      {
        event: 'turn.answered',
        model: usage.model,
        calls: usage.calls,
        promptTokens: usage.promptTokens,
        cachedTokens: usage.cachedTokens,
        completionTokens: usage.completionTokens,
        costUsd: cost,
        cacheCold: cold,
      },
      `answered: ${usage.promptTokens} prompt tokens (${usage.cachedTokens} cached), ${usage.completionTokens} completion`,
    );
    return this.#options.usage
      ?.record(
        { channelKey: key, purpose: 'reply', ...usage, replies: 1, coldReplies: cold ? 1 : 0 },
        new Date(this.#now()),
      )
      .catch((err: unknown) =>
        log.warn({ event: 'usage.record_failed', err }, 'could not record the turn’s usage'),
      );
  }

  /** `tool.called` (never the arguments or the result, except at debug) and the metric sample. */
  #report(call: ToolCall, report: ToolCallReport, tools: ChannelTools, log: Logger): void {
    const known = tools.specs.some((spec) => spec.name === call.name);
    const tool = known ? call.name : 'unknown';
    const durationMs = Math.round(report.durationMs);
    log.info(
      {
        event: 'tool.called',
        tool: call.name.slice(0, MAX_LOGGED_NAME),
        status: report.status,
        isError: report.outcome.isError,
        durationMs,
      },
      `tool ${call.name.slice(0, MAX_LOGGED_NAME)}: ${report.status} in ${durationMs} ms`,
    );
    // Clipped: a debug line shows what happened; the result itself is in the archive.
    log.debug(
      {
        event: 'tool.result',
        tool,
        arguments: loggedToolText(call.arguments),
        result: loggedToolText(report.outcome.text),
      },
      'tool result',
    );
    this.#options.onToolCall?.({ tool, status: report.status, durationMs: report.durationMs });
  }

  /** Memories of this channel's scope only, ranked by the store, within `budget` tokens; and their tokens. */
  async #recall(
    { key, settings, tokenizer }: Turn,
    text: string,
    budget: number,
  ): Promise<{ memories: Memory[]; tokens: number }> {
    if (budget <= 0) return { memories: [], tokens: 0 };
    const found = await this.#options.memories.recall({
      scopes: [memoryScope(key, settings.memory.scope)],
      text,
      limit: RECALL_CANDIDATES,
      // The bar in the store's query, so the limit counts only memories that clear it.
      minSharedTerms: RECALL_MIN_SHARED_TERMS,
    });
    const memories: Memory[] = [];
    let tokens = 0;
    // Still the last word: Postgres applies the bar through English stemming, not relevanceTo's
    // prefix rule, so this keeps what a prompt gets the same whichever store recalled it.
    const relevant = relevanceTo(text);
    for (const memory of found.filter((m) => relevant(m.text))) {
      const next = chatMessageTokens(tokenizer, renderMemories([...memories, memory]));
      if (next > budget) break;
      memories.push(memory);
      tokens = next;
    }
    return { memories, tokens };
  }
}

/** `model`, whose calls also end when `stop` aborts (a stop's grace period ran out). */
export function endedBy(stop: AbortSignal, model: ChatModel): ChatModel {
  return {
    label: model.label,
    async reply(messages, options = {}) {
      // A signal of its own per call: the OpenAI client never takes its listener off the signal it
      // is given, so the bot's long-lived one would gather one per call.
      const call = new AbortController();
      const abort = () => call.abort();
      const sources = options.signal === undefined ? [stop] : [stop, options.signal];
      for (const source of sources) {
        if (source.aborted) call.abort();
        else source.addEventListener('abort', abort, { once: true });
      }
      try {
        return await model.reply(messages, { ...options, signal: call.signal });
      } finally {
        for (const source of sources) source.removeEventListener('abort', abort);
      }
    },
  };
}
