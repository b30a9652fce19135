import { describe, expect, it } from 'vitest';
import { repliesQuoting } from './plan-message-change.js';

const msg = (seq: number, role: 'user' | 'assistant' | 'tool', text: string) => ({ seq, role, text });

describe('repliesQuoting', () => {
  const removed = [msg(4, 'user', 'Remember this: the vault code is 7431-ZEBRA.')];

  it("finds the bot's later messages that repeat a run of the message's words, ignoring case and punctuation", () => {
    const later = [
      msg(5, 'assistant', 'Noted! THE VAULT code is 7431 zebra, I will keep it.'),
      msg(6, 'user', 'the vault code is 7431-ZEBRA, right?'),
      msg(7, 'assistant', 'The vault is closed and the code review is at 7431 Main St.'),
      msg(8, 'tool', 'the vault code is 7431-ZEBRA'),
      msg(9, 'assistant', '[#4] mallory: remember this: the vault code is 7431-ZEBRA'),
    ];
    // A person's message and a tool result are not the bot's replies; seq 7 shares words, not a run.
    expect(repliesQuoting(later, removed)).toEqual([5, 9]);
  });

  it('needs the whole of a message shorter than a run, and ignores one of a single word', () => {
    const short = [msg(2, 'user', 'ship Friday'), msg(3, 'user', 'ok')];
    const later = [msg(4, 'assistant', 'We ship Friday.'), msg(5, 'assistant', 'ok then, ship it on Friday')];
    expect(repliesQuoting(later, short)).toEqual([4]);
  });

  it('looks only after the first message taken back', () => {
    expect(
      repliesQuoting([msg(3, 'assistant', 'remember this: the vault code is 7431-ZEBRA')], removed),
    ).toEqual([]);
  });
});
