import { describe, expect, it } from 'vitest';
import { planTracing } from './tracing-plan.js';

const ENDPOINT = 'http://collector:4318';

describe('planTracing', () => {
  it('is off without an endpoint, whatever else is set, and with OTEL_SDK_DISABLED or exporter none', () => {
    expect(planTracing({})).toEqual({ kind: 'off', why: 'no_endpoint', ignored: [] });
    expect(
      planTracing({
        OTEL_SERVICE_NAME: 'ebb',
        OTEL_TRACES_SAMPLER: 'always_on',
        OTEL_EXPORTER_OTLP_ENDPOINT: '',
      }),
    ).toMatchObject({ kind: 'off', why: 'no_endpoint' });
    expect(planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' })).toMatchObject({
      kind: 'off',
      why: 'sdk_disabled',
    });
    expect(planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'none' })).toEqual({
      kind: 'off',
      why: 'no_otlp_exporter',
      ignored: [],
    });
  });

  it('appends /v1/traces to the base endpoint and takes the traces endpoint as it is, which wins', () => {
    expect(planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT })).toEqual({
      kind: 'otlp',
      tracesUrl: 'http://collector:4318/v1/traces',
      serviceName: 'ebb',
      sampler: { name: 'parentbased_always_on' },
      ignored: [],
    });
    expect(planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: `${ENDPOINT}/otlp/` })).toMatchObject({
      tracesUrl: 'http://collector:4318/otlp/v1/traces',
    });
    expect(
      planTracing({
        OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://api.honeycomb.io/v1/traces',
      }),
    ).toMatchObject({ tracesUrl: 'https://api.honeycomb.io/v1/traces' });
  });

  it("names the service OTEL_SERVICE_NAME, else the process's own name", () => {
    expect(planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SERVICE_NAME: 'ebb-eu' })).toMatchObject(
      {
        serviceName: 'ebb-eu',
      },
    );
    expect(
      planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }, { serviceName: 'ebb-worker' }),
    ).toMatchObject({
      serviceName: 'ebb-worker',
    });
  });

  it('reads the sampler and its ratio as the SDK does, falling back to its defaults with a warning', () => {
    const plan = (sampler?: string, arg?: string) =>
      planTracing({
        OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
        OTEL_TRACES_SAMPLER: sampler,
        OTEL_TRACES_SAMPLER_ARG: arg,
      });
    expect(plan('always_off')).toMatchObject({ sampler: { name: 'always_off' }, ignored: [] });
    expect(plan('parentbased_traceidratio', '0.1')).toMatchObject({
      sampler: { name: 'parentbased_traceidratio', ratio: 0.1 },
      ignored: [],
    });
    expect(plan('traceidratio')).toMatchObject({ sampler: { name: 'traceidratio', ratio: 1 } });
    expect(plan('traceidratio', '1.5')).toMatchObject({
      sampler: { name: 'traceidratio', ratio: 1 },
      ignored: [{ variable: 'OTEL_TRACES_SAMPLER_ARG', reason: expect.stringContaining('1.5') }],
    });
    expect(plan('jaeger_remote')).toMatchObject({
      sampler: { name: 'parentbased_always_on' },
      ignored: [{ variable: 'OTEL_TRACES_SAMPLER', reason: expect.stringContaining('jaeger_remote') }],
    });
  });

  it('warns of what Ebb does not ship: another exporter, another protocol, an endpoint that is no URL', () => {
    expect(planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'console' })).toEqual({
      kind: 'off',
      why: 'no_otlp_exporter',
      ignored: [{ variable: 'OTEL_TRACES_EXPORTER', reason: expect.stringContaining('console') }],
    });
    expect(
      planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp,zipkin' }),
    ).toMatchObject({ kind: 'otlp', ignored: [{ variable: 'OTEL_TRACES_EXPORTER' }] });
    expect(
      planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).toMatchObject({ kind: 'otlp', ignored: [{ variable: 'OTEL_EXPORTER_OTLP_PROTOCOL' }] });
    expect(
      planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }),
    ).toMatchObject({ kind: 'otlp', ignored: [] });
    expect(planTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toEqual({
      kind: 'off',
      why: 'bad_endpoint',
      ignored: [{ variable: 'OTEL_EXPORTER_OTLP_ENDPOINT', reason: expect.stringContaining('URL') }],
    });
  });
});
