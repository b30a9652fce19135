import { describe, expect, it } from 'vitest';
import { relevanceTo } from './memory-recall.js';

const relevantToQuery = (query: string, memory: string) => relevanceTo(query)(memory);

describe('relevanceTo', () => {
  const memory = 'Ana deploys the billing service on Fridays after the rollback drill';

  it('needs two distinct words of the message, stop words aside', () => {
    expect(relevantToQuery('when does the billing deploy happen?', memory)).toBe(true);
    // One shared word is a coincidence of vocabulary, not a topic.
    expect(relevantToQuery('is the billing page down?', memory)).toBe(false);
    expect(relevantToQuery('what is it and who is there', memory)).toBe(false);
  });

  it('matches forms of a word by a common prefix of five letters or more', () => {
    // deployed / deploys, rollbacks / rollback.
    expect(relevantToQuery('who deployed after the rollbacks?', memory)).toBe(true);
    // Short words match only whole: "on" and "ana" are not prefixes of anything here.
    expect(relevantToQuery('an anagram', memory)).toBe(false);
  });

  it('takes every word of a one-word message as enough', () => {
    expect(relevantToQuery('billing?', memory)).toBe(true);
    expect(relevantToQuery('hello', memory)).toBe(false);
    expect(relevantToQuery('', memory)).toBe(false);
    // Words of one or two characters are no topic.
    expect(relevantToQuery('m ok', 'm ok the rest')).toBe(false);
  });
});
