/**
 * The tool definitions a channel is offered, and their tokens: every prompt carries them, so the
 * bot's usage (and the dashboard's, which must agree with it) sets them aside like the system
 * prompt. Counted once per encoding and tool set, since a turn reads them several times.
 */
import type { ResolvedChannelConfig } from '@ebb/config';
import { LruMap, type Tokenizer, type ToolSpec, toolSpecsTokens } from '@ebb/core';
import type { Toolbox } from '@ebb/tools';

/** Tool sets whose tokens are kept (few distinct sets: one per allow list and encoding). */
const MAX_TOOL_SETS = 64;

export class OfferedTools {
  readonly #toolbox: Pick<Toolbox, 'forChannel'> | undefined;
  readonly #tokens = new LruMap<string, number>(MAX_TOOL_SETS);

  /** Without a toolbox no tools are offered. */
  constructor(toolbox?: Pick<Toolbox, 'forChannel'>) {
    this.#toolbox = toolbox;
  }

  /** The specs the channel is offered now (its `[tools] allow`, as the toolbox caps them). */
  specs(settings: ResolvedChannelConfig): readonly ToolSpec[] {
    return this.#toolbox?.forChannel(settings.channelKey, settings.tools.allow).specs ?? [];
  }

  /** Tokens the channel's offered tools take in a prompt. */
  tokensFor(settings: ResolvedChannelConfig, tokenizer: Tokenizer): number {
    return this.tokens(tokenizer, this.specs(settings));
  }

  /** Tokens `specs` take in a prompt (0 for none). */
  tokens(tokenizer: Tokenizer, specs: readonly ToolSpec[]): number {
    if (specs.length === 0) return 0;
    const key = `${tokenizer.encoding}\u0000${specs.map((s) => s.name).join('\u0000')}`;
    return this.#tokens.getOrSet(key, () => toolSpecsTokens(tokenizer, specs));
  }
}
