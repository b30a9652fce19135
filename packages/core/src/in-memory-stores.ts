/**
 * The store ports in memory, for tests and `ebb simulate`: the same semantics as `@ebb/db`'s
 * Postgres stores (one contract suite runs against both), no I/O. Each call runs to completion
 * before the next starts, so the channel lock of the Postgres stores has nothing to guard here.
 */
import { type Memory, memoryFingerprint } from './memory.js';
import { MEMORY_RECALL_RANKING, recallTerms } from './memory-recall.js';
import type { ContextMessage, ContextView } from './model.js';
import { planEmergencyTruncation } from './plan-emergency-truncation.js';
import { planMemoryUpsert } from './plan-memory-upsert.js';
import { overlapsAny } from './plan-redaction.js';
import { planSplice, type SummaryResult } from './plan-splice.js';
import type {
  AppendResult,
  AuthoredSeqs,
  ChannelStore,
  ChannelSummary,
  CheckpointRedaction,
  CompactionRun,
  MemoryFilter,
  MemoryListOptions,
  MemoryQuery,
  MemoryStore,
  MemoryUpsertResult,
  NewMemory,
  NewMessage,
  PrefixView,
  RedactArchiveOutcome,
  ReplaceSummaryOutcome,
  RunStatus,
  RunStore,
  SpliceOutcome,
  StoredMessage,
  SummaryOutput,
  SummaryReplacement,
  TruncationOutcome,
  TruncationRequest,
} from './ports.js';
import { FINISHED_RUN_STATUSES, TERMINAL_RUN_STATUSES } from './run-status.js';
import { type Calibration, UNCALIBRATED } from './tokens.js';
import { WorkingContext } from './working-context.js';

const DAY_MS = 86_400_000;

export interface InMemoryStoreOptions {
  /** Milliseconds since the epoch; recall's recency is measured with it. */
  readonly now?: () => number;
}

interface ChannelState {
  readonly context: WorkingContext;
  /** Whole messages; index seq - 1. */
  readonly archive: StoredMessage[];
  readonly platformIds: Map<string, number>;
  calibration: Calibration;
}

const EMPTY_VIEW: ContextView = Object.freeze({ generation: 0, headSeq: 0, spans: [], raw: [], tokens: 0 });

export class InMemoryChannelStore implements ChannelStore {
  readonly #channels = new Map<string, ChannelState>();

  async append(channelKey: string, message: NewMessage): Promise<AppendResult> {
    const channel = this.#channel(channelKey);
    const { context } = channel;
    const id = message.platformMessageId;
    const existing = id === undefined ? undefined : channel.platformIds.get(id);
    if (existing !== undefined) {
      return {
        seq: existing,
        inserted: false,
        generation: context.generation,
        contextTokens: context.tokens,
      };
    }
    const seq = context.headSeq + 1;
    const base = {
      seq,
      role: message.role,
      author: message.author,
      ...(message.ts === undefined ? {} : { ts: message.ts }),
      ...(message.toolCalls === undefined ? {} : { toolCalls: message.toolCalls.map((c) => ({ ...c })) }),
      ...(message.toolCallId === undefined ? {} : { toolCallId: message.toolCallId }),
    };
    const entry: ContextMessage = {
      ...base,
      text: message.contextText ?? message.text,
      tokens: message.contextTokens,
      ...(message.omittedTokens === undefined ? {} : { omittedTokens: message.omittedTokens }),
    };
    context.append(entry);
    channel.archive.push({ ...base, text: message.text, tokens: message.tokens });
    if (id !== undefined) channel.platformIds.set(id, seq);
    return { seq, inserted: true, generation: context.generation, contextTokens: context.tokens };
  }

  async loadContext(channelKey: string): Promise<ContextView> {
    const view = this.#channels.get(channelKey)?.context.view();
    if (!view) return EMPTY_VIEW;
    return { ...view, spans: [...view.spans], raw: [...view.raw] };
  }

  async loadPrefix(channelKey: string): Promise<PrefixView> {
    const view = this.#channels.get(channelKey)?.context.view();
    if (!view) return { generation: 0, headSeq: 0, spans: [] };
    return { generation: view.generation, headSeq: view.headSeq, spans: [...view.spans] };
  }

  async generation(channelKey: string): Promise<number> {
    return this.#channels.get(channelKey)?.context.generation ?? 0;
  }

  async readArchive(channelKey: string, fromSeq: number, toSeq: number): Promise<StoredMessage[]> {
    const archive = this.#channels.get(channelKey)?.archive ?? [];
    return archive.slice(Math.max(0, fromSeq - 1), Math.max(0, toSeq));
  }

  async readAuthors(channelKey: string, fromSeq: number, toSeq: number): Promise<string[]> {
    const authors = new Set((await this.readArchive(channelKey, fromSeq, toSeq)).map((m) => m.author));
    return [...authors].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async splice(channelKey: string, result: SummaryResult): Promise<SpliceOutcome> {
    const context = this.#channels.get(channelKey)?.context ?? new WorkingContext();
    const plan = planSplice(context.view(), result);
    if (plan.kind !== 'splice') return plan;
    const applied = context.applySplice(plan);
    return { kind: 'splice', generation: context.generation, ...applied };
  }

  async truncate(channelKey: string, request: TruncationRequest): Promise<TruncationOutcome> {
    const context = this.#channels.get(channelKey)?.context;
    if (!context) return { kind: 'nothing', reason: 'empty' };
    if (request.expectedGeneration !== undefined && request.expectedGeneration !== context.generation) {
      return { kind: 'nothing', reason: 'stale' };
    }
    const plan = planEmergencyTruncation({ context: context.view(), ...request });
    if (plan.kind === 'nothing') return plan;
    const { tokensBefore, tokensAfter } = context.applyTruncation(plan);
    return { kind: 'truncate', plan, generation: context.generation, tokensBefore, tokensAfter };
  }

  async findAuthored(author: string): Promise<AuthoredSeqs[]> {
    return [...this.#channels.entries()]
      .map(([channelKey, c]) => ({
        channelKey,
        seqs: c.archive.filter((m) => m.author === author).map((m) => m.seq),
      }))
      .filter((a) => a.seqs.length > 0)
      .sort((a, b) => (a.channelKey < b.channelKey ? -1 : a.channelKey > b.channelKey ? 1 : 0));
  }

  async findContaining(text: string): Promise<AuthoredSeqs[]> {
    const needle = text.toLowerCase();
    const holds = (m: { text: string; toolCalls?: readonly { name: string; arguments: string }[] }) =>
      [m.text, ...(m.toolCalls ?? []).flatMap((c) => [c.name, c.arguments])].some((t) =>
        t.toLowerCase().includes(needle),
      );
    return [...this.#channels.entries()]
      .map(([channelKey, c]) => ({ channelKey, seqs: c.archive.filter(holds).map((m) => m.seq) }))
      .filter((a) => a.seqs.length > 0)
      .sort((a, b) => (a.channelKey < b.channelKey ? -1 : a.channelKey > b.channelKey ? 1 : 0));
  }

  async replaceSummary(channelKey: string, replacement: SummaryReplacement): Promise<ReplaceSummaryOutcome> {
    const context = this.#channels.get(channelKey)?.context;
    const current = context
      ?.view()
      .spans.find(
        (s) => s.kind === 'summary' && s.fromSeq === replacement.fromSeq && s.toSeq === replacement.toSeq,
      );
    if (!context || current?.kind !== 'summary' || current.jobId !== replacement.replaces) {
      return { kind: 'missing' };
    }
    const tokensBefore = context.tokens;
    const { replaces: _replaces, ...span } = replacement;
    context.replaceSummary({ kind: 'summary', ...span, createdGeneration: context.generation + 1 });
    return { kind: 'replaced', generation: context.generation, tokensBefore, tokensAfter: context.tokens };
  }

  async redactArchive(
    channelKey: string,
    tombstones: readonly StoredMessage[],
  ): Promise<RedactArchiveOutcome> {
    const channel = this.#channels.get(channelKey);
    if (!channel) return { redacted: 0, raw: 0, generation: 0 };
    let redacted = 0;
    for (const t of tombstones) {
      const stored = channel.archive[t.seq - 1];
      if (stored?.seq !== t.seq) continue;
      channel.archive[t.seq - 1] = { ...t };
      redacted++;
    }
    const raw = channel.context.replaceRaw(
      tombstones.filter((t) => channel.archive[t.seq - 1]?.seq === t.seq).map((t) => ({ ...t })),
    );
    return { redacted, raw, generation: channel.context.generation };
  }

  async redactRetiredSpans(): Promise<number> {
    // Spans replaced here are gone, not retired.
    return 0;
  }

  async calibration(channelKey: string): Promise<Calibration> {
    return this.#channels.get(channelKey)?.calibration ?? UNCALIBRATED;
  }

  async setCalibration(channelKey: string, calibration: Calibration): Promise<void> {
    this.#channel(channelKey).calibration = { factor: calibration.factor, samples: calibration.samples };
  }

  async listChannels(): Promise<ChannelSummary[]> {
    return [...this.#channels.keys()]
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((key) => {
        const { generation, headSeq, tokens } = this.#channels.get(key)?.context.view() ?? EMPTY_VIEW;
        return { key, headSeq, generation, tokens };
      });
  }

  #channel(channelKey: string): ChannelState {
    let channel = this.#channels.get(channelKey);
    if (!channel) {
      channel = {
        context: new WorkingContext(),
        archive: [],
        platformIds: new Map(),
        calibration: UNCALIBRATED,
      };
      this.#channels.set(channelKey, channel);
    }
    return channel;
  }
}

interface StoredMemory {
  memory: Memory;
  readonly channelKey: string;
  /** Lower-cased words of the text, for recall. */
  readonly words: readonly string[];
  lastSeenAt: number;
}

export class InMemoryMemoryStore implements MemoryStore {
  readonly #now: () => number;
  /** By id, in insertion order (ids count up). */
  readonly #byId = new Map<string, StoredMemory>();
  /** Id by scope and fingerprint. */
  readonly #byFingerprint = new Map<string, string>();
  #nextId = 1;

  constructor(options: InMemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  async upsert(memories: readonly NewMemory[]): Promise<MemoryUpsertResult> {
    let added = 0;
    const now = this.#now();
    for (const { memory: m, fingerprint } of planMemoryUpsert(memories)) {
      const key = `${m.scope}\u0000${fingerprint}`;
      const id = this.#byFingerprint.get(key);
      const stored = id === undefined ? undefined : this.#byId.get(id);
      if (stored) {
        // The first text stays; a refresh only raises the importance and the last sighting.
        stored.memory = { ...stored.memory, importance: Math.max(stored.memory.importance, m.importance) };
        stored.lastSeenAt = now;
        continue;
      }
      const newId = String(this.#nextId++);
      this.#byId.set(newId, {
        memory: {
          id: newId,
          type: m.type,
          text: m.text,
          importance: m.importance,
          ...(m.speaker === undefined ? {} : { speaker: m.speaker }),
          scope: m.scope,
          fromSeq: m.fromSeq,
          toSeq: m.toSeq,
        },
        channelKey: m.channelKey,
        words: recallTerms(m.text),
        lastSeenAt: now,
      });
      this.#byFingerprint.set(key, newId);
      added++;
    }
    return { added, refreshed: memories.length - added };
  }

  async recall(query: MemoryQuery): Promise<Memory[]> {
    const terms = recallTerms(query.text);
    if (terms.length === 0 || query.limit <= 0) return [];
    const scopes = new Set(query.scopes);
    const now = this.#now();
    const { importanceBase, recencyHalfLifeDays } = MEMORY_RECALL_RANKING;
    const ranked: { memory: Memory; score: number; order: number }[] = [];
    let order = 0;
    for (const stored of this.#byId.values()) {
      order++;
      if (!scopes.has(stored.memory.scope)) continue;
      const matches = terms.filter((t) => stored.words.some((w) => matchesTerm(w, t))).length;
      if (matches === 0) continue;
      const ageDays = Math.max(0, now - stored.lastSeenAt) / DAY_MS;
      const recency = 0.5 ** (ageDays / recencyHalfLifeDays);
      const score = matches * (importanceBase + stored.memory.importance) * recency;
      ranked.push({ memory: stored.memory, score, order });
    }
    ranked.sort((a, b) => b.score - a.score || a.order - b.order);
    return ranked.slice(0, query.limit).map((r) => r.memory);
  }

  async list(filter: MemoryFilter, options: MemoryListOptions = {}) {
    const out = this.#selected(filter);
    if (options.order === 'importance') out.sort((a, b) => b.importance - a.importance);
    return options.limit === undefined ? out : out.slice(0, options.limit);
  }

  async count(filter: MemoryFilter) {
    return this.#selected(filter).length;
  }

  /** By id: ids are given in order, and the map keeps insertion order. */
  #selected(filter: MemoryFilter): Memory[] {
    const out: Memory[] = [];
    for (const stored of this.#byId.values()) {
      if (filter.channelKey !== undefined && stored.channelKey !== filter.channelKey) continue;
      if (filter.speaker !== undefined && stored.memory.speaker !== filter.speaker) continue;
      if (filter.scope !== undefined && stored.memory.scope !== filter.scope) continue;
      out.push(stored.memory);
    }
    return out;
  }

  async forget(ids: readonly string[]): Promise<number> {
    let removed = 0;
    for (const id of new Set(ids)) {
      const stored = this.#byId.get(id);
      if (!stored) continue;
      this.#byId.delete(id);
      this.#byFingerprint.delete(
        `${stored.memory.scope}\u0000${memoryFingerprint(stored.memory.type, stored.memory.text)}`,
      );
      removed++;
    }
    return removed;
  }
}

/**
 * A memory word matches a query term when it is the term or the term plus an inflection ("prefers"
 * for "prefer"), a crude stand-in for the stemming Postgres full-text search does.
 */
function matchesTerm(word: string, term: string): boolean {
  if (word === term) return true;
  if (term.length < 3 || !word.startsWith(term)) return false;
  return ['s', 'es', 'ed', 'ing', 'd'].includes(word.slice(term.length));
}

export class InMemoryRunStore implements RunStore {
  readonly #now: () => number;
  /** In creation order. */
  readonly #runs = new Map<string, CompactionRun>();

  constructor(options: InMemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  async create(
    run: Pick<CompactionRun, 'jobId' | 'channelKey' | 'tier' | 'usage' | 'fromSeq' | 'toSeq' | 'generation'>,
  ): Promise<void> {
    const existing = this.#runs.get(run.jobId);
    if (existing) {
      // A worker that got the job first created the run without the usage; fill it in.
      if (Number.isNaN(existing.usage)) this.#runs.set(run.jobId, { ...existing, usage: run.usage });
      return;
    }
    this.#runs.set(run.jobId, {
      jobId: run.jobId,
      channelKey: run.channelKey,
      tier: run.tier,
      status: 'queued',
      usage: run.usage,
      fromSeq: run.fromSeq,
      toSeq: run.toSeq,
      generation: run.generation,
      attempts: 0,
      createdAt: this.#now(),
    });
  }

  async start(jobId: string): Promise<CompactionRun | undefined> {
    const previous = this.#runs.get(jobId);
    if (previous && !TERMINAL_RUN_STATUSES.has(previous.status)) {
      this.#runs.set(jobId, { ...previous, status: 'running', attempts: previous.attempts + 1 });
    }
    return previous;
  }

  async saveOutput(jobId: string, output: SummaryOutput): Promise<SummaryOutput> {
    const run = this.#runs.get(jobId);
    if (!run) return output;
    if (run.output) return run.output;
    const stored = structuredClone(output);
    this.#runs.set(jobId, { ...run, output: stored });
    return stored;
  }

  /** A finish of a run that was never created changes nothing. */
  async finish(
    jobId: string,
    outcome: Partial<Omit<CompactionRun, 'output' | 'createdAt' | 'finishedAt'>> &
      Pick<CompactionRun, 'status'>,
    options: { readonly onlyFrom?: readonly RunStatus[] } = {},
  ): Promise<void> {
    const run = this.#runs.get(jobId);
    if (!run) return;
    if (options.onlyFrom && !options.onlyFrom.includes(run.status)) return;
    const { jobId: _job, channelKey: _channel, ...fields } = outcome;
    this.#runs.set(jobId, {
      ...run,
      ...withoutUndefined(fields),
      ...(FINISHED_RUN_STATUSES.has(outcome.status) ? { finishedAt: this.#now() } : {}),
    });
  }

  async get(jobId: string): Promise<CompactionRun | undefined> {
    return this.#runs.get(jobId);
  }

  /** Newest first. */
  async recent(channelKey: string, limit: number): Promise<CompactionRun[]> {
    const runs = [...this.#runs.values()].filter((r) => r.channelKey === channelKey).reverse();
    return runs.slice(0, Math.max(0, limit));
  }

  async forgetCheckpoints(request: CheckpointRedaction): Promise<number> {
    const texts = new Set(request.memoryTexts);
    let changed = 0;
    for (const [jobId, run] of this.#runs) {
      if (!run.output) continue;
      if (run.channelKey === request.channelKey && overlapsAny(run, request.ranges)) {
        const { output: _output, ...rest } = run;
        this.#runs.set(jobId, rest);
        changed++;
        continue;
      }
      const memories = run.output.memories.filter((m) => !texts.has(m.text));
      if (memories.length === run.output.memories.length) continue;
      this.#runs.set(jobId, { ...run, output: { ...run.output, memories } });
      changed++;
    }
    return changed;
  }

  /** Oldest first. */
  async unfinished(options: {
    readonly createdBefore: number;
    readonly limit: number;
  }): Promise<CompactionRun[]> {
    return [...this.#runs.values()]
      .filter(
        (r) =>
          (r.status === 'queued' || r.status === 'running') && (r.createdAt ?? 0) < options.createdBefore,
      )
      .slice(0, Math.max(0, options.limit));
  }
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
