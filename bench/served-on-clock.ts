/**
 * The prompt-cache bench's second table (`prompt-cache.bench.ts`): the reply prompts a replay sent,
 * kept with the transcript time of the message each answers, re-served in order through the fake
 * OpenAI's cache rule with a given lifetime, as they would have been served had the messages come at
 * the transcript's pace.
 */
import { OPENAI_PROMPT_CACHE, PromptCache, promptTokens, type RecordedRequest } from '@ebb/testing/openai';

/** A reply prompt as the chat server received it, at the transcript time of the message it answers. */
export interface TimedPrompt {
  readonly at: number;
  readonly body: RecordedRequest['body'];
}

/**
 * The body with each message text replaced by the first copy seen of it: consecutive prompts repeat
 * almost every message, and 20,000 prompts of 128k tokens, each parsed afresh, would hold gigabytes.
 */
export function sharingTexts(
  body: RecordedRequest['body'],
  seen: Map<string, string>,
): RecordedRequest['body'] {
  const messages = body.messages.map((m) => {
    if (typeof m.content !== 'string') return m;
    const content = seen.get(m.content) ?? m.content;
    seen.set(content, content);
    return { ...m, content } as typeof m;
  });
  return { ...body, messages };
}

export interface Served {
  readonly prompt: number;
  readonly cached: number;
  readonly cold: number;
}

/**
 * The reply prompts re-served in order, each at its time, through the fake's cache rule with a
 * lifetime of `ttlMs`: what they would have been served had the messages come at the transcript's pace.
 */
export function serveOnClock(
  prompts: readonly TimedPrompt[],
  ttlMs: number,
  countTokens: (text: string) => number,
): Served {
  let now = 0;
  const cache = new PromptCache({ ...OPENAI_PROMPT_CACHE, ttlMs }, countTokens, () => now);
  let prompt = 0;
  let cached = 0;
  let cold = 0;
  for (const [i, { at, body }] of prompts.entries()) {
    // `now` is still the time of the previous reply prompt.
    if (i > 0 && at - now > ttlMs) cold++;
    now = at;
    const tokens = promptTokens(body, countTokens);
    prompt += tokens;
    cached += cache.serve(body, tokens);
  }
  return { prompt, cached, cold };
}
