import { describe, expect, it } from 'vitest';
import { DEFAULTS_CHANNEL_KEY } from './channel-layers.js';
import { parseConfig } from './parse-config.js';
import { explainChannel, resolveChannel } from './resolve-channel.js';

const config = (text: string) => parseConfig(text, 'config.toml');
/** A file with only these `[llm]` lines. */
const llm = (lines: string) => config(`[llm]\n${lines}`);

describe('resolveChannel', () => {
  it('starts background passes at the working size when it comes before background_threshold', () => {
    // (32,000 - 4,096) × 0.8 = 22,323 tokens: a working size of 12,000 comes first.
    const small = resolveChannel(
      config('[llm]\ncontext_window = 32000\n[compaction]\nworking_tokens = 12000\n'),
      'web:a',
    );
    expect(small.compaction.backgroundThreshold).toBeCloseTo(12_000 / 27_904, 6);
    expect(small.compaction.workingTokens).toBe(12_000);
    // The other tiers stay relative to the window.
    expect(small.compaction.aggressiveThreshold).toBe(0.85);
    // Above the threshold's own size it changes nothing.
    const large = resolveChannel(
      config('[llm]\ncontext_window = 32000\n[compaction]\nworking_tokens = 30000\n'),
      'web:a',
    );
    expect(large.compaction.backgroundThreshold).toBe(0.8);
  });

  it('frees working_fraction in a pass the working size starts, background_fraction at the edge', () => {
    const fractions = (toml: string) => {
      const { compaction } = resolveChannel(config(`[llm]\ncontext_window = 32000\n${toml}`), 'web:a');
      return [compaction.backgroundFraction, compaction.aggressiveFraction];
    };
    expect(fractions('')).toEqual([0.7, 0.5]);
    expect(fractions('[compaction]\nworking_fraction = 0.6\nbackground_fraction = 0.2\n')).toEqual([
      0.6, 0.5,
    ]);
    // At the window's edge (no working size, or one the background threshold comes before).
    expect(fractions('[compaction]\nworking_tokens = 0\nbackground_fraction = 0.2\n')).toEqual([0.2, 0.5]);
    expect(fractions('[compaction]\nworking_tokens = 30000\n')).toEqual([0.3, 0.5]);
  });

  it('gives built-in defaults for an empty file', () => {
    const resolved = resolveChannel(config(''), 'slack:T1:C1');
    expect(resolved).toEqual({
      channelKey: 'slack:T1:C1',
      llm: {
        model: 'gpt-5.4-mini',
        contextWindow: 128_000,
        maxOutputTokens: 4096,
        baseUrl: undefined,
        encoding: 'o200k_base',
        request: { tokenLimitParam: 'auto', promptCacheKey: true, promptCacheRetention: '24h' },
        price: undefined,
        cacheTtlSeconds: 86_400,
      },
      compaction: {
        // The default working size, 12,000 tokens of (128,000 - 4,096).
        backgroundThreshold: 12_000 / 123_904,
        workingTokens: 12_000,
        aggressiveThreshold: 0.85,
        emergencyThreshold: 0.95,
        backgroundFraction: 0.7, // working_fraction: the working size starts passes
        aggressiveFraction: 0.5,
        emergencyFraction: 0.5,
        protectRecent: 10,
        summaryMaxTokens: 1200,
        cooldownMs: 10_000,
        maxIneffectivePasses: 3,
        messageMaxTokens: 32_000,
        summarizerModel: 'gpt-5.4-mini',
        microcompaction: true,
        microcompactThreshold: 0.6,
        keepToolResults: 3,
        microcompactMinTokens: 200,
      },
      memory: { scope: 'channel', recallMaxTokens: 300 },
      bot: { systemPrompt: 'You are Ebb, a helpful assistant in a team chat.', respondTo: 'mentions' },
      tools: { allow: ['search_history', 'read_history'], maxSteps: 6, callTimeoutMs: 30_000 },
      privacy: { onDelete: 'redact', onEdit: 'update' },
      budget: { over: 'notice', limited: false },
      price: undefined,
      sources: expect.any(Object),
    });
    expect(new Set(Object.values(resolved.sources))).toEqual(new Set(['default']));
    expect(Object.keys(resolved.sources)).toHaveLength(45);
  });

  describe('precedence', () => {
    // At the window's edge (no working size), so the resolved threshold is the configured one.
    const layered = config(`
      [compaction]
      working_tokens = 0
      background_threshold = 0.70
      [slack.compaction]
      background_threshold = 0.65
      [channels."slack:T1:C1*".compaction]
      background_threshold = 0.50
      [channels."slack:T1:*".compaction]
      background_threshold = 0.60
    `);

    it.each([
      [DEFAULTS_CHANNEL_KEY, 0.7, '[compaction]'],
      ['web:abc', 0.7, '[compaction]'],
      ['discord:G1:C1', 0.7, '[compaction]'],
      ['slack:T2:C1', 0.65, '[slack]'],
      ['slack:T1:C2', 0.6, '[channels."slack:T1:*"]'],
      ['slack:T1:C1', 0.5, '[channels."slack:T1:C1*"]'],
      ['slack:T1:C1:1700000000.1234', 0.5, '[channels."slack:T1:C1*"]'],
    ])('%s gets background_threshold %s from %s', (key, value, source) => {
      const resolved = resolveChannel(layered, key);
      expect(resolved.compaction.backgroundThreshold).toBe(value);
      expect(resolved.sources['compaction.background_threshold']).toBe(source);
      expect(resolved.sources['compaction.aggressive_threshold']).toBe('default');
    });

    it('lets a more specific block win over a less specific one written after it', () => {
      const resolved = resolveChannel(layered, 'slack:T1:C1');
      expect(layered.channels.map((block) => block.pattern)).toEqual(['slack:T1:C1*', 'slack:T1:*']);
      expect(resolved.compaction.backgroundThreshold).toBe(0.5);
    });

    it('on equal literal characters prefers fewer *, then the block later in the file', () => {
      const stars = config(`
        [channels."slack:T1:*".bot]
        system_prompt = "one star"
        [channels."*slack:T1:*".bot]
        system_prompt = "two stars"
      `);
      expect(resolveChannel(stars, 'slack:T1:C1').bot.systemPrompt).toBe('one star');

      const order = (first: string, second: string) =>
        config(`
          [channels."${first}".bot]
          system_prompt = "${first}"
          [channels."${second}".bot]
          system_prompt = "${second}"
        `);
      expect(resolveChannel(order('slack:T1:*', 'slack:*:C1'), 'slack:T1:C1').bot.systemPrompt).toBe(
        'slack:*:C1',
      );
      expect(resolveChannel(order('slack:*:C1', 'slack:T1:*'), 'slack:T1:C1').bot.systemPrompt).toBe(
        'slack:T1:*',
      );
    });

    it('merges leaf by leaf, so each level keeps what the levels above leave alone', () => {
      const resolved = resolveChannel(
        config(`
          [llm]
          model = "gpt-4.1"
          [memory]
          recall_max_tokens = 500
          [discord.memory]
          scope = "workspace"
          [channels."discord:G1:*"]
          bot = { respond_to = "all" }
          llm = { context_window = 64000 }
        `),
        'discord:G1:C9',
      );
      expect(resolved.llm).toMatchObject({ model: 'gpt-4.1', contextWindow: 64_000, maxOutputTokens: 4096 });
      expect(resolved.memory).toEqual({ scope: 'workspace', recallMaxTokens: 500 });
      expect(resolved.bot.respondTo).toBe('all');
      expect(resolved.sources).toMatchObject({
        'llm.model': '[llm]',
        'llm.context_window': '[channels."discord:G1:*"]',
        'llm.max_output_tokens': 'default',
        'memory.scope': '[discord]',
        'memory.recall_max_tokens': '[memory]',
        'bot.respond_to': '[channels."discord:G1:*"]',
        'bot.system_prompt': 'default',
      });
    });

    it('applies a platform section only to its own platform and no pattern to the defaults key', () => {
      const mixed = config('[web.bot]\nrespond_to = "all"\n[channels."*".memory]\nrecall_max_tokens = 0\n');
      expect(resolveChannel(mixed, 'web:1').bot.respondTo).toBe('all');
      expect(resolveChannel(mixed, 'slack:T1:C1').bot.respondTo).toBe('mentions');
      expect(resolveChannel(mixed, 'slack:T1:C1').memory.recallMaxTokens).toBe(0);
      expect(resolveChannel(mixed, DEFAULTS_CHANNEL_KEY).memory.recallMaxTokens).toBe(300);
    });
  });

  describe('derived defaults', () => {
    it('sizes the summary and message caps from the merged context window and working size', () => {
      const small = config(
        '[compaction]\nworking_tokens = 0\n[channels."discord:*".llm]\ncontext_window = 16000\nmax_output_tokens = 1000\n',
      );
      expect(resolveChannel(small, 'discord:G:C').compaction).toMatchObject({
        summaryMaxTokens: 1280,
        messageMaxTokens: 4000,
      });
      expect(resolveChannel(small, 'discord:G:C').sources['compaction.summary_max_tokens']).toBe('default');
      expect(resolveChannel(small, 'slack:T:C').compaction).toMatchObject({
        summaryMaxTokens: 4096,
        messageMaxTokens: 32_000,
      });
      // A working size: a tenth of it, when that is less.
      const working = config('[compaction]\nworking_tokens = 20000\n');
      expect(resolveChannel(working, 'slack:T:C').compaction.summaryMaxTokens).toBe(2000);
      expect(resolveChannel(config(''), 'slack:T:C').compaction.summaryMaxTokens).toBe(1200);
    });

    it('keeps an explicit summary cap when a channel changes the window', () => {
      const explicit = config(
        '[compaction]\nsummary_max_tokens = 2000\n[channels."discord:*".llm]\ncontext_window = 16000\n',
      );
      expect(resolveChannel(explicit, 'discord:G:C').compaction.summaryMaxTokens).toBe(2000);
    });

    it('derives the tokenizer and summarizer from the channel model unless set', () => {
      const models = config(`
        [channels."discord:*".llm]
        model = "gpt-3.5-turbo"
        [channels."web:*".llm]
        model = "gpt-4-turbo"
        encoding = "o200k_base"
        [channels."web:*".compaction]
        summarizer_model = "gpt-4o-mini"
      `);
      expect(resolveChannel(models, 'discord:G:C').llm.encoding).toBe('cl100k_base');
      expect(resolveChannel(models, 'discord:G:C').compaction.summarizerModel).toBe('gpt-3.5-turbo');
      expect(resolveChannel(models, 'web:1').llm.encoding).toBe('o200k_base');
      expect(resolveChannel(models, 'web:1').compaction.summarizerModel).toBe('gpt-4o-mini');
    });
  });

  it('converts units and looks up the prices of the chat and the summarizer model', () => {
    const priced = config(`
      [llm]
      model = "gpt-5.4-mini"
      base_url = "http://127.0.0.1:8000/v1"
      [compaction]
      cooldown_seconds = 2.5
      summarizer_model = "gpt-5.4-nano"
      [prices."gpt-5.4-nano"]
      input_per_mtok = 0.2
      output_per_mtok = 1.25
      [prices."gpt-5.4-mini"]
      input_per_mtok = 0.75
      cached_input_per_mtok = 0.075
      output_per_mtok = 4.5
    `);
    const resolved = resolveChannel(priced, 'web:1');
    expect(resolved.compaction.cooldownMs).toBe(2500);
    expect(resolved.llm.baseUrl).toBe('http://127.0.0.1:8000/v1');
    expect(resolved.price).toEqual({ input_per_mtok: 0.2, output_per_mtok: 1.25 });
    expect(resolved.llm.price).toEqual({
      input_per_mtok: 0.75,
      cached_input_per_mtok: 0.075,
      output_per_mtok: 4.5,
    });
    expect(resolveChannel(config(''), 'web:1').price).toBeUndefined();
  });

  it('shapes requests by the [llm] request settings, sending only what the operator set', () => {
    const set = config(`
      [llm]
      token_limit_param = "max_tokens"
      prompt_cache_key = false
      prompt_cache_retention = "24h"
      temperature = 0.3
      reasoning_effort = "low"
    `);
    expect(resolveChannel(set, 'web:1').llm.request).toEqual({
      tokenLimitParam: 'max_tokens',
      promptCacheKey: false,
      promptCacheRetention: '24h',
      temperature: 0.3,
      reasoningEffort: 'low',
    });
    expect(() => config('[llm]\ntoken_limit_param = "max_output_tokens"')).toThrow(
      /llm\.token_limit_param.*"auto", "max_completion_tokens", "max_tokens"/s,
    );
    expect(() => config('[llm]\ntemperature = 3')).toThrow(/llm\.temperature.*from 0 to 2/s);
  });

  it("takes the cache's lifetime from cache_ttl_seconds, else from the retention OpenAI documents", () => {
    // The default model takes a day's retention, and it is sent by default.
    expect(resolveChannel(llm(''), 'web:1').llm.cacheTtlSeconds).toBe(86_400);
    expect(resolveChannel(llm('model = "gpt-4o-mini"'), 'web:1').llm.cacheTtlSeconds).toBe(300);
    expect(resolveChannel(llm('prompt_cache_retention = "none"'), 'web:1').llm.cacheTtlSeconds).toBe(300);
    expect(resolveChannel(llm('prompt_cache_retention = "24h"'), 'web:1').llm.cacheTtlSeconds).toBe(86_400);
    expect(resolveChannel(llm('prompt_cache_retention = "in_memory"'), 'web:1').llm.cacheTtlSeconds).toBe(
      300,
    );
    expect(
      resolveChannel(llm('prompt_cache_retention = "24h"\ncache_ttl_seconds = 3600'), 'web:1').llm
        .cacheTtlSeconds,
    ).toBe(3_600);
    expect(() => llm('cache_ttl_seconds = -1')).toThrow(/config\.toml.*llm\.cache_ttl_seconds/s);
  });

  it('asks for a day of cache retention for the models that take it, and only for them', () => {
    const sent = (lines: string) => resolveChannel(llm(lines), 'web:1').llm.request.promptCacheRetention;
    expect(sent('')).toBe('24h');
    expect(sent('model = "gpt-5.5"')).toBe('24h');
    expect(sent('model = "gpt-4.1-mini"')).toBe('24h');
    expect(sent('model = "gpt-4o"')).toBeUndefined();
    expect(sent('model = "deepseek-chat"')).toBeUndefined();
    expect(sent('prompt_cache_retention = "in_memory"')).toBe('in_memory');
    expect(sent('prompt_cache_retention = "none"')).toBeUndefined();
    expect(() => llm('prompt_cache_retention = "1h"')).toThrow(/llm\.prompt_cache_retention/);
  });

  it('returns a deeply frozen result', () => {
    const resolved = resolveChannel(config(''), 'web:1');
    expect(Object.isFrozen(resolved)).toBe(true);
    expect(Object.isFrozen(resolved.compaction)).toBe(true);
    expect(Object.isFrozen(resolved.sources)).toBe(true);
    expect(() => {
      (resolved.compaction as { protectRecent: number }).protectRecent = 0;
    }).toThrow(TypeError);
  });
});

describe('explainChannel', () => {
  it('lists the places that apply and every setting with its TOML key, value and source', () => {
    const explained = explainChannel(
      config(`
        [memory]
        scope = "workspace"
        [slack]
        mode = "http"
        [channels."slack:T1:*".compaction]
        protect_recent = 4
        [prices."gpt-5.4-mini"]
        input_per_mtok = 0.75
        output_per_mtok = 4.5
      `),
      'slack:T1:C1',
    );
    expect(explained.layers).toEqual(['default', '[memory]', '[channels."slack:T1:*"]']);
    expect(explained.settings).toContainEqual({
      key: 'compaction.protect_recent',
      value: 4,
      source: '[channels."slack:T1:*"]',
    });
    expect(explained.settings).toContainEqual({
      key: 'memory.scope',
      value: 'workspace',
      source: '[memory]',
    });
    expect(explained.settings).toContainEqual({ key: 'llm.base_url', value: undefined, source: 'default' });
    expect(explained.settings.at(-1)).toEqual({
      key: 'prices."gpt-5.4-mini"',
      value: { input_per_mtok: 0.75, output_per_mtok: 4.5 },
      source: '[prices]',
    });
  });
});
