/**
 * Microcompaction, the first tier: once usage reaches `microcompact_threshold` (or the background
 * threshold, when a channel set that lower), tool results older
 * than the newest `keep_tool_results` and at least `microcompact_min_tokens` large are replaced in
 * the working context by a stub that names the tool, its size and the seq the archive keeps it
 * under. No LLM call, synchronous, and cheap: a build log that took a quarter of the window becomes
 * one line long before a summary is needed, and `read_history` brings back the exact text.
 *
 * A stub is the message's context copy, like a clipped message's head + tail: the message keeps its
 * seq, role and `toolCallId` in the raw tail, so a call is never separated from its result (the
 * stub answers the call) and the spans' tiling of the prefix is untouched. A pass that later covers
 * the message summarizes the stub, not the whole result; the archive keeps the result whole.
 */

import type { ChannelCounters } from '../model/channel-counters.js';
import type { CompactionPolicy } from '../model/compaction-policy.js';
import type { ContextMessage, ContextView, Role, StoredMessage } from '../model/model.js';
import { messageTokens, type Tokenizer } from '../model/tokens.js';
import { plainText } from '../support/untrusted-text.js';
import {
  type FoundMessage,
  type RawCopy,
  type RawRewrite,
  rewriteRawCopies,
} from './plan-message-rewrite.js';

export type MicrocompactPolicy = Pick<
  CompactionPolicy,
  | 'microcompaction'
  | 'microcompactThreshold'
  | 'keepToolResults'
  | 'microcompactMinTokens'
  | 'backgroundThreshold'
  | 'emergencyThreshold'
>;

/** Characters of a result's first line the stub shows. */
const FIRST_LINE_CHARS = 80;

/**
 * The most tokens a stub takes, for deciding before any is written (`decideAfterTurn`): its fixed
 * wording (about 35 tokens), the first line (at most 80 characters, about 20), a tool name (MCP's
 * go to 64 characters) and the message's overhead, rounded up.
 */
export const STUB_TOKENS_BOUND = 100;

/**
 * The seqs of the raw tool results to stub now, oldest first; empty when none qualifies or
 * microcompaction is off. Stubs count among the newest kept results, so stubbing is stable: the
 * same context plans nothing twice.
 *
 * At the emergency threshold only the newest result is kept whole (the one the model is most
 * likely working on): stubbing the others loses nothing the archive does not keep, while the
 * truncation they would otherwise meet sets half the context aside.
 */
export function planMicrocompaction(
  context: Pick<ContextView, 'raw' | 'toolResultSeqs'>,
  usage: number,
  policy: MicrocompactPolicy,
): number[] {
  // The first tier also where a channel lowered background_threshold below microcompact_threshold.
  const from = Math.min(policy.microcompactThreshold, policy.backgroundThreshold);
  if (!policy.microcompaction || usage < from) return [];
  const keep =
    usage >= policy.emergencyThreshold ? Math.min(policy.keepToolResults, 1) : policy.keepToolResults;
  const { raw } = context;
  const first = raw[0]?.seq ?? 0;
  const results = context.toolResultSeqs ?? raw.filter((m) => m.role === 'tool').map((m) => m.seq);
  const seqs: number[] = [];
  for (let i = results.length - 1 - keep; i >= 0; i--) {
    // Raw seqs are consecutive, so a result's index is its seq less the first raw seq.
    const m = raw[(results[i] ?? 0) - first];
    // Stubbing takes every result past the kept ones at once, so past a stub all is settled.
    if (m === undefined || m.stubbed) break;
    if (m.tokens >= policy.microcompactMinTokens) seqs.push(m.seq);
  }
  return seqs.reverse();
}

/** A tool result as its stub names it. */
export interface StubbedResult {
  /** The tool whose call the result answers. */
  readonly toolName: string;
  /** The whole result's tokens (a clipped copy's left-out tokens included). */
  readonly resultTokens: number;
  /** Where the archive keeps the result. */
  readonly seq: number;
  /** The result's text: the stub shows its first line. */
  readonly text: string;
}

/**
 * The stub the model reads in place of a tool result. `readBack`: the channel may call
 * read_history, so the stub says how to get the whole result back; without it, it only says what
 * was there (naming a tool the model cannot call would have it try, and fail).
 */
export function renderStub(result: StubbedResult, readBack = true): string {
  const { toolName, resultTokens, seq, text } = result;
  const first = plainText(text)
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '');
  const line =
    first === undefined
      ? ''
      : `: ${first.length > FIRST_LINE_CHARS ? `${first.slice(0, FIRST_LINE_CHARS)}…` : first}`;
  const stub = `[tool result of ${toolName}, ${resultTokens.toLocaleString('en-US')} tokens, archived as #${seq}${line}]`;
  return readBack
    ? `${stub} Call read_history with from_seq ${seq} and to_seq ${seq} for the whole result.`
    : stub;
}

/**
 * The stubs for `seqs` of `raw` as context entries. The tool's name comes from the call the result
 * answers (just before it in the raw tail); its size is the whole result's, a clipped copy included.
 */
export function stubToolResults(
  raw: readonly ContextMessage[],
  seqs: readonly number[],
  tokenizer: Tokenizer,
  readBack = true,
): ContextMessage[] {
  const wanted = new Set(seqs);
  const names = new Map<string, string>();
  const stubs: ContextMessage[] = [];
  for (const m of raw) {
    for (const call of m.toolCalls ?? []) names.set(call.id, call.name);
    if (!wanted.has(m.seq) || m.role !== 'tool') continue;
    const toolName = (m.toolCallId && names.get(m.toolCallId)) || 'a tool';
    const resultTokens = m.tokens + (m.omittedTokens ?? 0);
    const { omittedTokens: _clipped, ...rest } = m;
    const text = renderStub({ toolName, resultTokens, seq: m.seq, text: m.text }, readBack);
    stubs.push({ ...rest, text, tokens: messageTokens(tokenizer, { ...rest, text }), stubbed: true });
  }
  return stubs;
}

/** A message a stub names, as the store found it: its role, whether it is stubbed, its copy's tokens. */
export interface StubTarget extends FoundMessage {
  readonly role: Role;
  readonly stubbed?: boolean;
}

/**
 * What `ContextWriter.stubToolResults` is asked: microcompaction's stubs for raw tool results
 * (`stubToolResults`) and the generation they were planned on.
 */
export interface StubRequest {
  /** The generation the stubs were planned on; when the channel has moved on, nothing changes. */
  readonly expectedGeneration: number;
  /** The context copies to store: same seq, the stub as text, its tokens, `stubbed` set. */
  readonly stubs: readonly Pick<ContextMessage, 'seq' | 'text' | 'tokens' | 'stubbed'>[];
}

export type StubPlan =
  | ({
      readonly kind: 'stub';
      /** Context tokens the stubs save (before less after). */
      readonly tokensSaved: number;
    } & RawRewrite)
  | { readonly kind: 'stale'; readonly reason: string };

/**
 * Whether the store may put these stubs in place, planned on what it found under the channel lock:
 * the channel (undefined: no such channel) and the messages the stubs name. Each stub must be marked
 * `stubbed` and name a raw tool result (after the compacted prefix: a seq a truncation or a splice
 * took has no copy to stub) not stubbed yet, once; the channel must still be at the generation the
 * stubs were planned on. Else `stale`, and nothing changes. No stubs change nothing either.
 */
export function planStubs(
  channel: ChannelCounters | undefined,
  found: readonly StubTarget[],
  request: StubRequest,
): StubPlan {
  if (channel === undefined) return { kind: 'stale', reason: 'no such channel' };
  if (request.expectedGeneration !== channel.generation) {
    return { kind: 'stale', reason: `the channel is at generation ${channel.generation}` };
  }
  const current = new Map(found.map((m) => [m.seq, m]));
  const copies: RawCopy[] = [];
  for (const stub of request.stubs) {
    const target = current.get(stub.seq);
    // Once planned, a seq named again is no longer a result left to stub.
    current.delete(stub.seq);
    if (
      target?.role !== 'tool' ||
      target.stubbed === true ||
      target.seq <= channel.prefixEnd ||
      stub.stubbed !== true
    ) {
      return { kind: 'stale', reason: `seq ${stub.seq} is not a raw tool result to stub` };
    }
    copies.push({ seq: stub.seq, copy: { text: stub.text, tokens: stub.tokens, stubbed: true } });
  }
  const rewrite = rewriteRawCopies(channel, found, copies);
  return { kind: 'stub', tokensSaved: rewrite.tokensBefore - rewrite.tokensAfter, ...rewrite };
}

/** A stored message as a pass reads it: the stub in place of a stubbed tool result, else whole. */
export function summarizedMessage(message: StoredMessage): StoredMessage {
  if (message.stub === undefined) return message;
  const { stub, ...rest } = message;
  return { ...rest, text: stub.text, tokens: stub.tokens };
}
