/**
 * Where a channel's model is, and the one place the OpenAI client is built: nothing outside
 * `@ebb/llm` imports the `openai` SDK (`npm run lint` checks it). A server is an API key, a base URL,
 * both or neither; neither is offline mode.
 */
import OpenAI from 'openai';

/** A channel's model server: `OPENAI_API_KEY` and its `[llm] base_url`. */
export interface LlmServer {
  readonly apiKey: string | undefined;
  readonly baseUrl: string | undefined;
}

/**
 * Offline: no key and no server, so replies come from the `OfflineResponder` and summaries from the
 * `ExtractiveSummarizer`. The one place that decides it, for the bot's start line, its chat models
 * and the worker's summarizers alike.
 */
export function isOffline(server: LlmServer): boolean {
  return server.apiKey === undefined && server.baseUrl === undefined;
}

/**
 * The client of a server. `maxRetries: 0`, since `OpenAiChatModel` and `OpenAiSummarizer` run their
 * own retries (`withRetry`); a server without a key (a local one) is sent a placeholder.
 */
export function openAiClient(server: LlmServer): OpenAI {
  return new OpenAI({
    apiKey: server.apiKey ?? 'not-needed',
    ...(server.baseUrl === undefined ? {} : { baseURL: server.baseUrl }),
    maxRetries: 0,
  });
}
