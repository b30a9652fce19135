/**
 * The bot's hold on its `ChannelCompactor`: made when the bot starts, asked with the channel's
 * compactor settings (the system prompt's and the offered tools' tokens counted once per prompt,
 * tools and encoding, and the memories the channel's last turn recalled), run as the monitor after
 * a turn, and told when a worker's splice changed a channel's context.
 *
 * Usage reserves the memories a turn really sent, not the recall budget: in a small window a
 * reserve for memories that are not there leaves passes nothing to free. A turn's recall is bounded
 * by the room its prompt has left under the emergency threshold (`recallBudget`), so recalling
 * never pushes a prompt past the window.
 */
import { type EbbConfig, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import {
  type Calibration,
  ChannelCompactor,
  type ChannelCompactorOptions,
  type CompactionEventSink,
  type CompactionQueue,
  type CompactorSettings,
  type ContextWriter,
  chatMessageTokens,
  LruMap,
  promptIsCold,
  systemPromptTokens,
  type Tokenizer,
  type ToolSpec,
  TRUNCATION_MARKER,
  type TurnLog,
  WorkingContext,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import { BotError } from '../errors.js';
import { compactorSettingsOf } from '../status/channel-status.js';
import { OfferedTools } from '../status/offered-tools.js';
import type { ChannelState } from './channel-states.js';
import type { TurnChannel } from './turn.js';

export interface BotCompactionOptions {
  readonly config: () => EbbConfig;
  readonly channels: Pick<TurnLog, 'loadContext'> & ContextWriter;
  readonly runs: ChannelCompactorOptions['runs'];
  readonly queue: CompactionQueue;
  readonly onEvent?: CompactionEventSink;
  /** The tools a channel is offered and their tokens, which usage sets aside (none without). */
  readonly offeredTools?: OfferedTools;
  /** The clock a channel's pace is measured on (default `Date.now`). */
  readonly now?: () => number;
}

/** Channels whose last recall is remembered; one forgotten counts no memories until its next turn. */
const RECALLED_CHANNELS = 10_000;

export class BotCompaction {
  readonly #options: BotCompactionOptions;
  /** Tokens of the memories each channel's last turn recalled. */
  readonly #recalled = new LruMap<string, number>(RECALLED_CHANNELS);
  readonly #promptTokenCache = new LruMap<string, number>(64);
  readonly #offeredTools: OfferedTools;
  /** Per resolved config (one per turn); dropped with it. The tokenizer follows from its encoding. */
  readonly #settingsOf = new WeakMap<ResolvedChannelConfig, CompactorSettings>();
  #compactor: ChannelCompactor | undefined;

  constructor(options: BotCompactionOptions) {
    this.#options = options;
    this.#offeredTools = options.offeredTools ?? new OfferedTools();
  }

  async start(): Promise<void> {
    const options = this.#options;
    this.#compactor = new ChannelCompactor({
      channels: options.channels,
      runs: options.runs,
      queue: options.queue,
      // The marker's tokens under o200k; other encodings differ by a token or two.
      markerTokens: chatMessageTokens(await loadTokenizer('o200k_base'), TRUNCATION_MARKER),
      ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
      ...(options.now === undefined ? {} : { now: options.now }),
    });
  }

  /** The compactor; a `not_started` error before `start`. */
  get compactor(): ChannelCompactor {
    if (!this.#compactor) throw new BotError('the bot is not started', { code: 'not_started' });
    return this.#compactor;
  }

  /**
   * The channel's compactor settings: made once per resolved config (a turn resolves its channel's
   * config once and asks for these several times: the pre-check, each tool step's monitor, a
   * provider overflow; the offered tools are worked out only the first time), with the memories the
   * channel's last turn recalled added to the reserve.
   */
  settingsOf(settings: ResolvedChannelConfig, tokenizer: Tokenizer): CompactorSettings {
    const made = this.#baseSettings(settings, tokenizer);
    const recalled = this.#recalled.get(settings.channelKey) ?? 0;
    return recalled === 0 ? made : { ...made, reservedTokens: made.reservedTokens + recalled };
  }

  /**
   * Tokens of memories a turn of the channel may recall: `recall_max_tokens`, within the room its
   * prompt has left under the emergency threshold (the context, system prompt and tools counted).
   */
  recallBudget(state: ChannelState, settings: ResolvedChannelConfig, tokenizer: Tokenizer): number {
    const { llm, compaction, memory } = settings;
    const prompt =
      (compaction.emergencyThreshold * (llm.contextWindow - llm.maxOutputTokens)) / state.calibration.factor;
    const room =
      Math.floor(prompt) - state.context.tokens - this.#baseSettings(settings, tokenizer).reservedTokens;
    return Math.max(0, Math.min(memory.recallMaxTokens, room));
  }

  /** The memories a turn of the channel recalled: its usage reserves these from now on. */
  recalled(key: string, tokens: number): void {
    this.#recalled.set(key, tokens);
  }

  #baseSettings(settings: ResolvedChannelConfig, tokenizer: Tokenizer): CompactorSettings {
    let made = this.#settingsOf.get(settings);
    if (made === undefined) {
      made = compactorSettingsOf(
        settings,
        tokenizer,
        this.promptTokens(tokenizer, settings.bot.systemPrompt),
        this.#offeredTools.tokensFor(settings, tokenizer),
      );
      this.#settingsOf.set(settings, made);
    }
    return made;
  }

  /** Tokens `specs` take in a prompt (the model call calibrates against them). */
  toolTokens(tokenizer: Tokenizer, specs: readonly ToolSpec[]): number {
    return this.#offeredTools.tokens(tokenizer, specs);
  }

  /** Runs the monitor on the turn's channel; returns the usage after it acted. */
  async monitor({ key, state, settings, tokenizer }: TurnChannel): Promise<number> {
    const compactorSettings = this.settingsOf(settings, tokenizer);
    const result = await this.compactor.afterTurn(
      key,
      state.context.view(),
      compactorSettings,
      state.calibration,
    );
    if (!result.context) return result.usage;
    state.context = new WorkingContext(result.context);
    return this.compactor.usage(state.context.view(), compactorSettings, state.calibration);
  }

  /**
   * The channel's cache went cold at the last count (`CacheSilence`): unless a reply since (any
   * replica's, as the context shows it) warmed it again, a pass that is due soon is queued now
   * (`ChannelCompactor.onSilence`).
   */
  async onSilence({ key, state, settings, tokenizer }: TurnChannel, now: number): Promise<void> {
    const context = state.context.view();
    if (!promptIsCold(context, now, 1000 * settings.llm.cacheTtlSeconds)) return;
    await this.compactor.onSilence(key, context, this.settingsOf(settings, tokenizer), state.calibration);
  }

  /**
   * The channel's cached context moved to a newer generation: the compactor learns the passes that
   * landed since, their durations and whether they helped (judged on the store's figures at each
   * splice, whenever and however the bot came to hold the spliced context).
   */
  async contextChanged(key: string, calibration: Calibration): Promise<void> {
    const settings = resolveChannel(this.#options.config(), key);
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    await this.compactor.contextChanged(key, this.settingsOf(settings, tokenizer), calibration);
  }

  /**
   * Tokens of the system message a prompt renders to, counted once per prompt and encoding (it is
   * read several times a turn).
   */
  promptTokens(tokenizer: Tokenizer, prompt: string): number {
    const key = `${tokenizer.encoding}\u0000${prompt}`;
    return this.#promptTokenCache.getOrSet(key, () => systemPromptTokens(tokenizer, prompt));
  }
}
