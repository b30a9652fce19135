import { describe, expect, it } from 'vitest';
import type { ContextMessage } from '../model/model.js';
import { lastReplyAt, promptIsCold } from './cold-prompt.js';

const at = (iso: string) => Date.parse(iso);
const message = (seq: number, role: ContextMessage['role'], ts?: string): ContextMessage => ({
  seq,
  role,
  author: role === 'user' ? 'ana' : 'ebb',
  text: `message ${seq}`,
  tokens: 5,
  ...(ts === undefined ? {} : { ts }),
});

describe('promptIsCold', () => {
  const raw = [
    message(1, 'user', '2026-12-01T10:00:00Z'),
    message(2, 'assistant', '2026-12-01T10:00:05Z'),
    message(3, 'user', '2026-12-01T10:20:00Z'),
  ];

  it('counts the silence from the newest reply, not from the newest message', () => {
    expect(lastReplyAt({ raw })).toBe(at('2026-12-01T10:00:05Z'));
    // 19 min 55 s after the reply: warm at a day's lifetime, cold at five minutes'.
    const now = at('2026-12-01T10:20:00Z');
    expect(promptIsCold({ raw }, now, 86_400_000)).toBe(false);
    expect(promptIsCold({ raw }, now, 300_000)).toBe(true);
  });

  it('is cold with no reply in the context, and skips replies without a time', () => {
    expect(promptIsCold({ raw: [message(1, 'user', '2026-12-01T10:00:00Z')] }, 0, 86_400_000)).toBe(true);
    const untimed = [...raw, message(4, 'assistant'), message(5, 'assistant', '1700000000.000100')];
    expect(lastReplyAt({ raw: untimed })).toBe(at('2026-12-01T10:00:05Z'));
  });

  it('is warm exactly at the lifetime, cold just after it', () => {
    const reply = at('2026-12-01T10:00:05Z');
    expect(promptIsCold({ raw }, reply + 300_000, 300_000)).toBe(false);
    expect(promptIsCold({ raw }, reply + 300_001, 300_000)).toBe(true);
  });
});
