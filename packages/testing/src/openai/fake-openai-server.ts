/**
 * A local server that speaks the OpenAI Chat Completions wire protocol, so tests drive the real
 * `openai` client (`new OpenAI({ baseURL: server.url, apiKey: 'test' })`) over HTTP instead of
 * stubbing it. Replies are scripted (a queue, then a handler, then a default), faults are programmed
 * for the next N requests or for requests matching a predicate, and every request is recorded.
 *
 *   const server = await FakeOpenAiServer.start();
 *   server.enqueue({ json: { summary: 'ok', memories: [] } });
 *   server.fail({ kind: 'rate_limit', retryAfterSeconds: 2 }, { times: 3 });
 *   ...
 *   expect(server.requests[0]?.body.response_format).toMatchObject({ type: 'json_schema' });
 *   await server.close();
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { closeServer, listenOnFreePort, readBody, sendJson } from '../http.js';
import { ScriptedFaults } from '../scripted-faults.js';
import { refusedParameter, type ServerDialect } from './parameter-rules.js';
import { OPENAI_PROMPT_CACHE, PromptCache, type PromptCacheOptions } from './prompt-cache.js';
import {
  completionBody,
  contextLengthMessage,
  errorBody,
  type FakeReply,
  promptTokens,
  requestedMaxTokens,
  resolveReply,
  streamChunks,
} from './wire.js';

export type { ServerDialect } from './parameter-rules.js';
export { isReasoningModel } from './parameter-rules.js';
export type { PromptCacheOptions } from './prompt-cache.js';
export type { FakeReply, FakeToolCall, FinishReason } from './wire.js';

/** A request as the server received it. */
export interface RecordedRequest {
  /** 0 for the first request the server saw. */
  readonly index: number;
  readonly method: string;
  /** The path without the query string, e.g. `/v1/chat/completions`. */
  readonly path: string;
  /** Lower-cased names; the `authorization` value is replaced by `[redacted]`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed JSON body (not validated beyond `model` and `messages`). */
  readonly body: ChatCompletionCreateParams;
  /** The fault the server answered with, when it answered with one. */
  readonly fault?: FakeFault['kind'] | 'unsupported_parameter';
}

export type FakeReplySource = FakeReply | ((request: RecordedRequest) => FakeReply | Promise<FakeReply>);

/** A failure the server can answer with instead of a reply. */
export type FakeFault =
  /** 429 `rate_limit_exceeded`; `Retry-After` (seconds) and/or `retry-after-ms`; 1 s when neither is given. */
  | { readonly kind: 'rate_limit'; readonly retryAfterSeconds?: number; readonly retryAfterMs?: number }
  /** 429 `insufficient_quota`: the account is out of credit; retrying does not help. */
  | { readonly kind: 'insufficient_quota' }
  /** 500 by default, or another 5xx. */
  | { readonly kind: 'server_error'; readonly status?: number }
  /** 400 `context_length_exceeded` with the real message and body. */
  | { readonly kind: 'context_length_exceeded'; readonly maxContextTokens?: number }
  /** 401 `invalid_api_key`. */
  | { readonly kind: 'invalid_api_key' }
  /** Waits before answering normally (past a client timeout, the client gives up first). */
  | { readonly kind: 'slow'; readonly delayMs: number }
  /** 200 whose message content is not valid JSON for the requested schema. */
  | { readonly kind: 'malformed_content'; readonly content?: string }
  /** 200 whose body is not JSON at all (by default still labelled `application/json`). */
  | { readonly kind: 'malformed_body'; readonly body?: string; readonly contentType?: string }
  /** The connection is destroyed without an answer. */
  | { readonly kind: 'connection_reset' };

export interface FaultRule {
  /** How many requests it answers; unlimited with `when` alone, 1 when neither is given. */
  readonly times?: number;
  /** Only requests matching this are answered with the fault. */
  readonly when?: (request: RecordedRequest) => boolean;
}

export interface FakeOpenAiServerOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get a 401. */
  readonly apiKey?: string;
  /**
   * When set, a request whose estimated prompt plus `max_tokens` exceeds it gets the real 400
   * `context_length_exceeded`, as a provider with this window would answer.
   */
  readonly contextWindow?: number;
  /** Counts tokens for `usage` and the window check; chars/4 by default. */
  readonly countTokens?: (text: string) => number;
  /** Characters per streamed content chunk. */
  readonly streamChunkChars?: number;
  /**
   * Which parameters the server refuses (`parameter-rules.ts`): `openai` (default) as
   * api.openai.com today, `legacy` as an older server that knows only `max_tokens`.
   */
  readonly dialect?: ServerDialect;
  /**
   * OpenAI's automatic prompt caching (`prompt-cache.ts`), reported as
   * `usage.prompt_tokens_details.cached_tokens`; `false` reports no cache at all, as a server
   * without one; an object changes the rule's numbers.
   */
  readonly promptCache?: boolean | Partial<PromptCacheOptions>;
  /** Milliseconds before each answer (a real provider takes seconds); a function decides per request. */
  readonly latencyMs?: number | ((request: RecordedRequest) => number);
  /** Milliseconds since the epoch, for the cache's expiry. */
  readonly now?: () => number;
  /**
   * Requests kept in `requests`, newest last (their `index` still counts every request): a replay
   * of thousands of 100k-token prompts would otherwise hold every body in memory.
   */
  readonly keepRequests?: number;
}

const DEFAULTS = {
  apiKey: '',
  contextWindow: Number.POSITIVE_INFINITY,
  countTokens: (text: string) => Math.ceil(text.length / 4),
  streamChunkChars: 16,
  dialect: 'openai',
  promptCache: true,
  latencyMs: 0,
  now: Date.now,
  keepRequests: Number.POSITIVE_INFINITY,
} as const satisfies Required<FakeOpenAiServerOptions>;

/** Prompt tokens the server has been asked for and served from its cache, over every completed reply. */
export interface PromptCacheTotals {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** Replies whose prompt the cache served a part of (warm), and the tokens of theirs it did not serve. */
  readonly warmReplies: number;
  readonly warmUncachedTokens: number;
}

const NO_TOTALS: PromptCacheTotals = {
  promptTokens: 0,
  cachedTokens: 0,
  warmReplies: 0,
  warmUncachedTokens: 0,
};

const DEFAULT_REPLY: FakeReply = { content: 'This is a reply from the fake OpenAI server.' };
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export class FakeOpenAiServer {
  /** Base URL for the client: `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  readonly #server: Server;
  readonly #options: Required<FakeOpenAiServerOptions>;
  readonly #requests: RecordedRequest[] = [];
  readonly #queue: FakeReplySource[] = [];
  #handler: FakeReplySource | undefined;
  readonly #faults = new ScriptedFaults<RecordedRequest, FakeFault>('FakeOpenAiServer');
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #cache: PromptCache | undefined;
  #totals = { ...NO_TOTALS };
  #ids = 0;
  /** Requests received, whether or not `requests` still holds them. */
  #seen = 0;

  private constructor(server: Server, options: Required<FakeOpenAiServerOptions>) {
    this.#server = server;
    this.#options = options;
    const { promptCache } = options;
    this.#cache =
      promptCache === false
        ? undefined
        : new PromptCache(
            { ...OPENAI_PROMPT_CACHE, ...(promptCache === true ? {} : promptCache) },
            options.countTokens,
            options.now,
          );
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}/v1`;
  }

  /** Listens on 127.0.0.1, on a free port. */
  static async start(options: FakeOpenAiServerOptions = {}): Promise<FakeOpenAiServer> {
    const merged = { ...DEFAULTS, ...options };
    let fake: FakeOpenAiServer | undefined;
    const server = createServer((req, res) => {
      // Requests cannot arrive before listen() resolves, so the fake exists by then.
      if (!fake) {
        res.destroy();
        return;
      }
      fake.#handle(req, res).catch((err: unknown) => {
        if (res.headersSent) res.destroy();
        else sendJson(res, 500, errorBody(`fake server failure: ${String(err)}`, 'server_error'));
      });
    });
    await listenOnFreePort(server);
    fake = new FakeOpenAiServer(server, merged);
    return fake;
  }

  /** Every request received so far, oldest first. */
  get requests(): readonly RecordedRequest[] {
    return this.#requests;
  }

  /** Requests to `POST /v1/chat/completions`, oldest first. */
  get completionRequests(): readonly RecordedRequest[] {
    return this.#requests.filter((r) => r.path === '/v1/chat/completions' && r.method === 'POST');
  }

  /** Prompt tokens of the replies sent so far, and how many of them the cache served. */
  get cacheTotals(): PromptCacheTotals {
    return { ...this.#totals };
  }

  /** Answers requests that find the queue empty (until replaced). */
  reply(source: FakeReplySource): this {
    this.#handler = source;
    return this;
  }

  /** Answers the next requests, one reply each, before the handler. */
  enqueue(...sources: FakeReplySource[]): this {
    this.#queue.push(...sources);
    return this;
  }

  /** Answers the next `times` requests (or those matching `when`) with a fault instead of a reply. */
  fail(fault: FakeFault, rule: FaultRule = {}): this {
    this.#faults.add({
      matches: rule.when ?? (() => true),
      answer: () => fault,
      times: rule.times ?? (rule.when ? Number.POSITIVE_INFINITY : 1),
    });
    return this;
  }

  /** Forgets scripted replies, the handler, faults and recorded requests. */
  reset(): void {
    this.#requests.length = 0;
    this.#seen = 0;
    this.#queue.length = 0;
    this.#handler = undefined;
    this.#faults.clear();
    this.#cache?.clear();
    this.#totals = { ...NO_TOTALS };
  }

  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    await closeServer(this.#server);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.setHeader('x-request-id', `req_${randomBytes(12).toString('hex')}`);
    const raw = await readBody(req, MAX_BODY_BYTES);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    const headers = recordHeaders(req);

    if (method !== 'POST' || path !== '/v1/chat/completions') {
      this.#record({ method, path, headers, body: {} as ChatCompletionCreateParams });
      sendJson(res, 404, errorBody(`Invalid URL (${method} ${path})`, 'invalid_request_error'));
      return;
    }
    const body = parseRequest(raw);
    if (typeof body === 'string') {
      this.#record({ method, path, headers, body: {} as ChatCompletionCreateParams });
      sendJson(res, 400, errorBody(body, 'invalid_request_error'));
      return;
    }
    const request = { method, path, headers, body };
    if (this.#options.apiKey !== '' && req.headers.authorization !== `Bearer ${this.#options.apiKey}`) {
      this.#record({ ...request, fault: 'invalid_api_key' });
      sendFault(res, { kind: 'invalid_api_key' });
      return;
    }
    const refused = refusedParameter(body, this.#options.dialect);
    if (refused) {
      this.#record({ ...request, fault: 'unsupported_parameter' });
      sendJson(res, 400, refused);
      return;
    }
    const fault = this.#faults.take({ ...request, index: this.#seen });
    const tokens = promptTokens(body, this.#options.countTokens);
    const maxTokens = requestedMaxTokens(body);
    const overflow = tokens + maxTokens > this.#options.contextWindow;
    const recordedFault = fault?.kind ?? (overflow ? 'context_length_exceeded' : undefined);
    const recorded = this.#record(recordedFault ? { ...request, fault: recordedFault } : request);

    const { latencyMs } = this.#options;
    const latency = typeof latencyMs === 'function' ? latencyMs(recorded) : latencyMs;
    const delayMs = latency + (fault?.kind === 'slow' ? fault.delayMs : 0);
    if (delayMs > 0) {
      const answered = await this.#delay(res, delayMs);
      if (!answered) return; // the client gave up (timeout or abort)
    }
    if (fault && fault.kind !== 'slow') {
      sendFault(res, fault);
      return;
    }

    if (overflow) {
      sendFault(res, { kind: 'context_length_exceeded', maxContextTokens: this.#options.contextWindow }, [
        tokens,
        maxTokens,
      ]);
      return;
    }

    const source = this.#queue.shift() ?? this.#handler ?? DEFAULT_REPLY;
    const reply = typeof source === 'function' ? await source(recorded) : source;
    const id = ++this.#ids;
    const resolved = resolveReply(
      reply,
      body,
      { completionId: `chatcmpl-fake${id}`, toolCallId: (i) => `call_fake${id}_${i}` },
      this.#options.countTokens,
      Math.floor(this.#options.now() / 1000),
      (prompt) => this.#cache?.serve(body, prompt),
    );
    const cached = resolved.usage.prompt_tokens_details?.cached_tokens ?? 0;
    const t = this.#totals;
    this.#totals = {
      promptTokens: t.promptTokens + resolved.usage.prompt_tokens,
      cachedTokens: t.cachedTokens + cached,
      warmReplies: t.warmReplies + (cached > 0 ? 1 : 0),
      warmUncachedTokens: t.warmUncachedTokens + (cached > 0 ? resolved.usage.prompt_tokens - cached : 0),
    };
    if (body.stream) {
      const includeUsage = body.stream_options?.include_usage === true;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      for (const chunk of streamChunks(resolved, includeUsage, this.#options.streamChunkChars)) {
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      }
      res.end('data: [DONE]\n\n');
      return;
    }
    sendJson(res, 200, completionBody(resolved));
  }

  #record(request: Omit<RecordedRequest, 'index'>): RecordedRequest {
    const recorded = { ...request, index: this.#seen++ };
    this.#requests.push(recorded);
    if (this.#requests.length > this.#options.keepRequests) this.#requests.shift();
    return recorded;
  }

  /** Resolves true after `ms`, or false as soon as the client hangs up. */
  #delay(res: ServerResponse, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const onClose = () => {
        clearTimeout(timer);
        this.#timers.delete(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        res.off('close', onClose);
        resolve(!res.destroyed);
      }, ms);
      this.#timers.add(timer);
      res.once('close', onClose);
    });
  }
}

/** The faults that answer at once (a slow fault answers normally, later). */
type ImmediateFault = Exclude<FakeFault, { readonly kind: 'slow' }>;

function sendFault(res: ServerResponse, fault: ImmediateFault, measured?: readonly [number, number]): void {
  switch (fault.kind) {
    case 'rate_limit': {
      const headers: Record<string, string> = {
        'x-ratelimit-limit-requests': '500',
        'x-ratelimit-remaining-requests': '0',
      };
      if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = String(fault.retryAfterMs);
      if (fault.retryAfterSeconds !== undefined || fault.retryAfterMs === undefined) {
        headers['retry-after'] = String(fault.retryAfterSeconds ?? 1);
      }
      sendJson(
        res,
        429,
        errorBody(
          'Rate limit reached for requests in organization org-fake on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again later.',
          'requests',
          'rate_limit_exceeded',
        ),
        headers,
      );
      return;
    }
    case 'insufficient_quota':
      sendJson(
        res,
        429,
        errorBody(
          'You exceeded your current quota, please check your plan and billing details.',
          'insufficient_quota',
          'insufficient_quota',
        ),
      );
      return;
    case 'server_error':
      sendJson(
        res,
        fault.status ?? 500,
        errorBody('The server had an error while processing your request. Sorry about that!', 'server_error'),
      );
      return;
    case 'context_length_exceeded': {
      const max = fault.maxContextTokens ?? 128_000;
      const [prompt, completion] = measured ?? [max + 1, 0];
      sendJson(
        res,
        400,
        errorBody(
          contextLengthMessage(max, prompt, completion),
          'invalid_request_error',
          'context_length_exceeded',
          'messages',
        ),
      );
      return;
    }
    case 'invalid_api_key':
      sendJson(
        res,
        401,
        errorBody(
          'Incorrect API key provided: sk-fake***. You can find your API key at https://platform.openai.com/account/api-keys.',
          'invalid_request_error',
          'invalid_api_key',
        ),
      );
      return;
    case 'malformed_content':
      sendJson(res, 200, {
        id: 'chatcmpl-malformed',
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: 'fake',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: fault.content ?? 'Sure! Here is the summary: {"summary": "unfinished',
              refusal: null,
            },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
      });
      return;
    case 'malformed_body': {
      const body = fault.body ?? '<html><body>502 Bad Gateway: upstream connect error</body></html>';
      res.writeHead(200, { 'content-type': fault.contentType ?? 'application/json' });
      res.end(body);
      return;
    }
    case 'connection_reset':
      res.socket?.destroy();
      return;
    default: {
      const never: never = fault;
      throw new Error(`unknown fault ${JSON.stringify(never)}`);
    }
  }
}

function recordHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    out[name] = name === 'authorization' ? '[redacted]' : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** The request body, or the API's error message when it is not a chat completion request. */
function parseRequest(raw: string): ChatCompletionCreateParams | string {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)";
  }
  if (typeof body !== 'object' || body === null) return 'The request body must be a JSON object.';
  const { model, messages } = body as { model?: unknown; messages?: unknown };
  if (typeof model !== 'string' || model === '') return 'you must provide a model parameter';
  if (!Array.isArray(messages) || messages.length === 0) {
    return "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.";
  }
  return body as ChatCompletionCreateParams;
}
