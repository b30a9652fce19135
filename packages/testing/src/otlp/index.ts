export * from './fake-otlp-collector.js';
export { loadOtlpTraceTypes, type OtlpTraceTypes, SPAN_KINDS, STATUS_CODES } from './otlp-trace-request.js';
