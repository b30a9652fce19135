import { describe, expect, it } from 'vitest';
import { type FaultScript, ScriptedFaults } from './scripted-faults.js';

function script(name: string, prefix: string, times: number): FaultScript<string, string> {
  return { matches: (r) => r.startsWith(prefix), answer: (r) => `${name} for ${r}`, times };
}

describe('ScriptedFaults', () => {
  it('answers with the oldest matching script, times times, then drops it', () => {
    const faults = new ScriptedFaults<string, string>('Fake');
    faults.add(script('first', 'chat.', 2));
    faults.add(script('second', 'chat.post', 1));
    faults.add(script('users', 'users.', Number.POSITIVE_INFINITY));

    expect(faults.take('conversations.info')).toBeUndefined();
    expect(faults.take('chat.postMessage')).toBe('first for chat.postMessage');
    expect(faults.take('chat.update')).toBe('first for chat.update');
    expect(faults.take('chat.postMessage')).toBe('second for chat.postMessage');
    expect(faults.take('chat.postMessage')).toBeUndefined();
    for (let i = 0; i < 3; i++) expect(faults.take('users.info')).toBe('users for users.info');
    faults.clear();
    expect(faults.take('users.info')).toBeUndefined();
  });

  it('refuses a script that would never answer', () => {
    const faults = new ScriptedFaults<string, string>('Fake');
    expect(() => faults.add(script('never', '', 0))).toThrow('Fake: a fault needs times >= 1, got 0');
  });
});
