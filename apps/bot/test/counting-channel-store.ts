/** An in-memory channel store that counts the reads a context cache makes, and what the cache's tests write and compare. */
import type { ContextView } from '@ebb/core';
import { InMemoryChannelStore } from '@ebb/core/testing';
import type { AppendedMessage } from '../src/bot/channel-states.js';

/** Counts whole contexts loaded and tails read. */
export class CountingStore extends InMemoryChannelStore {
  loads = 0;
  tails = 0;
  /** Runs while a tail is being read (after the read, before it returns). */
  duringTail: (() => void) | undefined;

  override async loadContext(channelKey: string) {
    this.loads++;
    return super.loadContext(channelKey);
  }

  override async loadAfter(channelKey: string, afterSeq: number) {
    this.tails++;
    const delta = await super.loadAfter(channelKey, afterSeq);
    this.duringTail?.();
    return delta;
  }
}

/** What a cached context must agree with a fresh load on. */
export const comparable = ({ generation, headSeq, spans, raw, tokens }: ContextView) => ({
  generation,
  headSeq,
  spans,
  raw,
  tokens,
});

/** A tool step: the call and its result, in one write. */
export const toolStep = (id: string): AppendedMessage[] => [
  {
    role: 'assistant',
    author: 'ebb',
    text: '',
    ts: '',
    toolCalls: [{ id, name: 'lookup', arguments: '{}' }],
  },
  { role: 'tool', author: 'lookup', text: `result ${id}`, ts: '', toolCallId: id },
];
