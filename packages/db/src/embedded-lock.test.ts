import { expect, it } from 'vitest';
import { commandOf } from './embedded-lock.js';

it('names the holder by its program and command words, never an argument (which may be text being forgotten)', () => {
  expect(commandOf(['/usr/bin/node', '/app/apps/bot/bin/ebb.mjs', 'dev', '--config', 'config.toml'])).toBe(
    'ebb dev',
  );
  expect(
    commandOf(['node', '/app/node_modules/.bin/ebb', 'memories', 'forget', '--match', 'sk-live-4f9a']),
  ).toBe('ebb memories forget');
  expect(commandOf(['node', 'ebb', 'simulate', '/home/ana/chat.jsonl'])).toBe('ebb simulate');
  expect(commandOf(['node', 'ebb', 'memories', 'sk-live-4f9a'])).toBe('ebb memories');
  expect(commandOf(['node'])).toBe('node');
});
