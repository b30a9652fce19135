import { describe, expect, it } from 'vitest';
import { encodingForModel } from './encoding-for-model.js';

describe('encodingForModel', () => {
  it.each([
    ['gpt-4o-mini', 'o200k_base'],
    ['gpt-4.1-nano', 'o200k_base'],
    ['gpt-5', 'o200k_base'],
    ['o1-preview', 'o200k_base'],
    ['o3-mini', 'o200k_base'],
    ['o4-mini', 'o200k_base'],
    ['gpt-4-turbo', 'cl100k_base'],
    ['gpt-4', 'cl100k_base'],
    ['gpt-3.5-turbo', 'cl100k_base'],
    ['llama3.1:8b', 'o200k_base'],
  ])('%s uses %s', (model, encoding) => {
    expect(encodingForModel(model)).toBe(encoding);
  });
});
