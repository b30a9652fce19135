/**
 * The libraries are instrumented only for a process that traces: a traced command and an endpoint.
 * Otherwise nothing of the instrumentations is loaded (seen in the module cache, where Node keeps
 * every CommonJS module). The case that does instrument registers a loader hook for the whole
 * process, so it runs in its own: `apps/bot/test/system/traces.int.test.ts`.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { instrumentLibraries } from './instrument-libraries.js';

const INSTRUMENTATION = /[\\/]node_modules[\\/](@opentelemetry[\\/]instrumentation|import-in-the-middle)/;
const moduleCache = createRequire(import.meta.url).cache;
const loaded = () => Object.keys(moduleCache).filter((path) => INSTRUMENTATION.test(path));

describe('instrumentLibraries', () => {
  it.each([
    ['start', {}],
    ['worker', { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }],
    ['config', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }],
    ['status', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }],
    [undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }],
  ])('does nothing for `ebb %s` with %o', async (command, env) => {
    expect(await instrumentLibraries(command, env)).toBe(false);
    expect(loaded()).toEqual([]);
  });
});
