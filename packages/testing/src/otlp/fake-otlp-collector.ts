/**
 * A local OpenTelemetry collector for tests: it speaks OTLP over HTTP as a real one does (`POST
 * /v1/traces`, `application/x-protobuf`, gzip or not), decodes each export with the protocol's own
 * definitions (`otlp-trace-request.ts`) and keeps the spans, so a test points the real SDK and its
 * exporter at it (`OTEL_EXPORTER_OTLP_ENDPOINT=collector.url`) and checks what arrived.
 *
 *   const collector = await FakeOtlpCollector.start();
 *   const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }, logger);
 *   ...
 *   await tracing.shutdown(); // flushes
 *   const span = await collector.waitForSpan('chat gpt-4o-mini');
 *   expect(span.attributes['gen_ai.usage.input_tokens']).toBe(812);
 *   await collector.close();
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { withTimeout } from '@ebb/core';
import { closeServer, listenOnFreePort, readBytes, sendJson } from '../http.js';
import {
  decodeTraceRequest,
  loadOtlpTraceTypes,
  type OtlpTraceTypes,
  type RecordedSpan,
} from './otlp-trace-request.js';

export type {
  OtlpAttributes,
  OtlpValue,
  RecordedSpan,
  SpanKindName,
  StatusCodeName,
} from './otlp-trace-request.js';

const TRACES_PATH = '/v1/traces';
const PROTOBUF = 'application/x-protobuf';
const DEFAULT_WAIT_MS = 5_000;

type SpanMatch = string | ((span: RecordedSpan) => boolean);

interface Waiter {
  readonly matches: (span: RecordedSpan) => boolean;
  readonly resolve: (span: RecordedSpan) => void;
}

export class FakeOtlpCollector {
  /** The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it: `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Where spans are posted, as `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` takes it. */
  readonly tracesUrl: string;
  readonly #server: Server;
  readonly #types: OtlpTraceTypes;
  readonly #spans: RecordedSpan[] = [];
  readonly #waiters = new Set<Waiter>();
  #exports = 0;
  #refused = 0;

  private constructor(server: Server, types: OtlpTraceTypes) {
    this.#server = server;
    this.#types = types;
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    this.tracesUrl = `${this.url}${TRACES_PATH}`;
  }

  /** Listens on 127.0.0.1, on a free port. */
  static async start(): Promise<FakeOtlpCollector> {
    const server = createServer();
    await listenOnFreePort(server);
    const collector = new FakeOtlpCollector(server, loadOtlpTraceTypes());
    server.on('request', (req, res) => {
      collector.#handle(req, res).catch((err: unknown) => {
        if (res.headersSent) res.destroy();
        else sendJson(res, 500, { message: `fake collector failure: ${String(err)}` });
      });
    });
    return collector;
  }

  /** Every span received so far, in the order they arrived. */
  get spans(): readonly RecordedSpan[] {
    return this.#spans;
  }

  /** Export requests accepted, and refused (a wrong path, content type or body). */
  get exports(): { readonly accepted: number; readonly refused: number } {
    return { accepted: this.#exports, refused: this.#refused };
  }

  /** The spans of one trace, in the order they arrived. */
  trace(traceId: string): RecordedSpan[] {
    return this.#spans.filter((s) => s.traceId === traceId);
  }

  /** The first span with this name (or matching this), once it has arrived; rejects after `timeoutMs`. */
  async waitForSpan(match: SpanMatch, timeoutMs = DEFAULT_WAIT_MS): Promise<RecordedSpan> {
    const matches = typeof match === 'string' ? (s: RecordedSpan) => s.name === match : match;
    const seen = this.#spans.find(matches);
    if (seen) return seen;
    let waiter: Waiter | undefined;
    const arrived = new Promise<RecordedSpan>((resolve) => {
      waiter = { matches, resolve };
      this.#waiters.add(waiter);
    });
    try {
      return await withTimeout(() => arrived, timeoutMs);
    } finally {
      if (waiter) this.#waiters.delete(waiter);
    }
  }

  /** Forgets the spans received. */
  reset(): void {
    this.#spans.length = 0;
    this.#exports = 0;
    this.#refused = 0;
  }

  async close(): Promise<void> {
    await closeServer(this.#server);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBytes(req);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'POST' || path !== TRACES_PATH) {
      this.#refuse(res, 404, `this collector takes POST ${TRACES_PATH} only`);
      return;
    }
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
    if (contentType !== PROTOBUF) {
      this.#refuse(
        res,
        415,
        `this collector takes ${PROTOBUF} only, not ${contentType || 'no content type'}`,
      );
      return;
    }
    let spans: RecordedSpan[];
    try {
      spans = decodeTraceRequest(
        this.#types,
        req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body,
      );
    } catch (err) {
      this.#refuse(res, 400, `not an ExportTraceServiceRequest: ${String(err)}`);
      return;
    }
    this.#exports++;
    this.#spans.push(...spans);
    for (const span of spans) {
      for (const waiter of this.#waiters) {
        if (waiter.matches(span)) {
          this.#waiters.delete(waiter);
          waiter.resolve(span);
        }
      }
    }
    // An empty ExportTraceServiceResponse: no partial success to report.
    const response = this.#types.response.encode(this.#types.response.create({})).finish();
    res.writeHead(200, { 'content-type': PROTOBUF, 'content-length': response.length });
    res.end(response);
  }

  #refuse(res: ServerResponse, status: number, message: string): void {
    this.#refused++;
    sendJson(res, status, { code: status, message });
  }
}
