/**
 * An OTLP trace export as it arrives on the wire (`ExportTraceServiceRequest`, protobuf), decoded
 * with the OpenTelemetry protocol's own definitions (`proto/`, loaded by protobufjs) into one plain
 * record per span: ids as lowercase hex, attribute values as JSON-like values, enums by name.
 */
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const PROTO_DIR = fileURLToPath(new URL('./proto/', import.meta.url));
const SERVICE_PROTO = 'opentelemetry/proto/collector/trace/v1/trace_service.proto';
const PACKAGE = 'opentelemetry.proto.collector.trace.v1';

/** An attribute value as OTLP carries it (`AnyValue`); bytes as hex, a key-value list as an object. */
export type OtlpValue =
  | string
  | number
  | boolean
  | readonly OtlpValue[]
  | { readonly [key: string]: OtlpValue };
export type OtlpAttributes = Readonly<Record<string, OtlpValue>>;

export const SPAN_KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
export type SpanKindName = (typeof SPAN_KINDS)[number];
export const STATUS_CODES = ['unset', 'ok', 'error'] as const;
export type StatusCodeName = (typeof STATUS_CODES)[number];

export interface RecordedSpan {
  readonly name: string;
  /** 32 lowercase hex digits. */
  readonly traceId: string;
  /** 16 lowercase hex digits. */
  readonly spanId: string;
  /** Absent on a root span. */
  readonly parentSpanId?: string;
  readonly kind: SpanKindName;
  readonly attributes: OtlpAttributes;
  readonly status: { readonly code: StatusCodeName; readonly message?: string };
  readonly events: readonly { readonly name: string; readonly attributes: OtlpAttributes }[];
  readonly startTimeUnixNano: bigint;
  readonly endTimeUnixNano: bigint;
  /** The attributes of the process that sent it (`service.name`, `service.version`, …). */
  readonly resource: OtlpAttributes;
  /** The instrumentation scope (the tracer's name and version). */
  readonly scope: { readonly name: string; readonly version?: string };
}

/** The request and response messages of the trace service. */
export interface OtlpTraceTypes {
  readonly request: protobuf.Type;
  readonly response: protobuf.Type;
}

/** Parses the vendored definitions (a few milliseconds). */
export function loadOtlpTraceTypes(): OtlpTraceTypes {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => PROTO_DIR + target;
  root.loadSync(SERVICE_PROTO);
  return {
    request: root.lookupType(`${PACKAGE}.ExportTraceServiceRequest`),
    response: root.lookupType(`${PACKAGE}.ExportTraceServiceResponse`),
  };
}

/** The spans of one export request's body; throws on a body that is not one. */
export function decodeTraceRequest(types: OtlpTraceTypes, body: Uint8Array): RecordedSpan[] {
  const message = types.request.decode(body);
  const request = types.request.toObject(message, {
    longs: String,
    enums: String,
    bytes: String,
    defaults: false,
  }) as WireRequest;
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scopeSpans) => {
      const scope = {
        name: scopeSpans.scope?.name ?? '',
        ...(scopeSpans.scope?.version ? { version: scopeSpans.scope.version } : {}),
      };
      return (scopeSpans.spans ?? []).map((span) => recordedSpan(span, resource, scope));
    });
  });
}

function recordedSpan(span: WireSpan, resource: OtlpAttributes, scope: RecordedSpan['scope']): RecordedSpan {
  const parent = hex(span.parentSpanId);
  return {
    name: span.name ?? '',
    traceId: hex(span.traceId),
    spanId: hex(span.spanId),
    ...(parent === '' ? {} : { parentSpanId: parent }),
    kind: enumName(span.kind, 'SPAN_KIND_', SPAN_KINDS),
    attributes: attributesOf(span.attributes),
    status: {
      code: enumName(span.status?.code, 'STATUS_CODE_', STATUS_CODES),
      ...(span.status?.message ? { message: span.status.message } : {}),
    },
    events: (span.events ?? []).map((e) => ({ name: e.name ?? '', attributes: attributesOf(e.attributes) })),
    startTimeUnixNano: BigInt(span.startTimeUnixNano ?? 0),
    endTimeUnixNano: BigInt(span.endTimeUnixNano ?? 0),
    resource,
    scope,
  };
}

function enumName<T extends string>(wire: string | undefined, prefix: string, names: readonly T[]): T {
  const name = (wire ?? `${prefix}UNSPECIFIED`).slice(prefix.length).toLowerCase();
  return names.find((n) => n === name) ?? (names[0] as T);
}

function attributesOf(list: readonly WireKeyValue[] | undefined): OtlpAttributes {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key ?? '', anyValue(kv.value)]));
}

function anyValue(value: WireAnyValue | undefined): OtlpValue {
  if (value === undefined) return '';
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.bytesValue !== undefined) return hex(value.bytesValue);
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(anyValue);
  if (value.kvlistValue !== undefined) return attributesOf(value.kvlistValue.values);
  return '';
}

/** Bytes as protobufjs gives them with `bytes: String` (base64), as hex. */
function hex(base64: string | undefined): string {
  return base64 === undefined ? '' : Buffer.from(base64, 'base64').toString('hex');
}

/** The request as `toObject` gives it with the options above: every field optional (proto3). */
interface WireRequest {
  readonly resourceSpans?: readonly {
    readonly resource?: { readonly attributes?: readonly WireKeyValue[] };
    readonly scopeSpans?: readonly {
      readonly scope?: { readonly name?: string; readonly version?: string };
      readonly spans?: readonly WireSpan[];
    }[];
  }[];
}

interface WireSpan {
  readonly traceId?: string;
  readonly spanId?: string;
  readonly parentSpanId?: string;
  readonly name?: string;
  readonly kind?: string;
  readonly startTimeUnixNano?: string;
  readonly endTimeUnixNano?: string;
  readonly attributes?: readonly WireKeyValue[];
  readonly events?: readonly { readonly name?: string; readonly attributes?: readonly WireKeyValue[] }[];
  readonly status?: { readonly code?: string; readonly message?: string };
}

interface WireKeyValue {
  readonly key?: string;
  readonly value?: WireAnyValue;
}

interface WireAnyValue {
  readonly stringValue?: string;
  readonly boolValue?: boolean;
  readonly intValue?: string;
  readonly doubleValue?: number;
  readonly bytesValue?: string;
  readonly arrayValue?: { readonly values?: readonly WireAnyValue[] };
  readonly kvlistValue?: { readonly values?: readonly WireKeyValue[] };
}
