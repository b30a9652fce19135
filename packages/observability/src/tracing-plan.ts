/**
 * Whether, and how, Ebb traces: decided from the standard OpenTelemetry variables alone, with the
 * meanings and defaults the OpenTelemetry SDK gives them, so an operator's usual settings work as
 * they do for any other service. Tracing is on only when an OTLP endpoint is named; with none set
 * the decision is `off` and nothing of the SDK is ever loaded (`startTracing`).
 *
 * What is read, in order:
 *   1. `OTEL_SDK_DISABLED=true`: off, whatever else is set.
 *   2. `OTEL_TRACES_EXPORTER`: unset or listing `otlp`: OTLP; `none`: off; anything else (`console`,
 *      `zipkin`) is not shipped with Ebb: off, with a warning.
 *   3. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
 *      `/v1/traces` appended; neither: off. A value that is not an http(s) URL: off, with a warning.
 *   4. `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`: Ebb exports
 *      `http/protobuf` only; another value is warned about and ignored.
 *   5. `OTEL_SERVICE_NAME`, else the process's own name (`ebb`, `ebb-worker`).
 *   6. `OTEL_TRACES_SAMPLER` (default `parentbased_always_on`) and `OTEL_TRACES_SAMPLER_ARG` (the ratio
 *      of the `traceidratio` samplers, 0..1, default 1); an unknown sampler or a bad ratio falls back
 *      to the default, with a warning, as the SDK does.
 *
 * An empty variable means unset, as everywhere in Ebb (`loadEnv`). The exporter itself still reads
 * its transport variables (`OTEL_EXPORTER_OTLP_HEADERS`, `_TIMEOUT`, `_COMPRESSION`, certificates),
 * as the SDK does; nothing of Ebb reads them.
 */

/** The variables this module reads; the composition root passes them from the environment Ebb loaded. */
export const TRACING_ENV_NAMES = [
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_SERVICE_NAME',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
] as const;

export type TracingEnvName = (typeof TRACING_ENV_NAMES)[number];
export type TracingEnv = { readonly [K in TracingEnvName]?: string | undefined };

export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export type SamplerPlan =
  | { readonly name: Exclude<SamplerName, 'traceidratio' | 'parentbased_traceidratio'> }
  | { readonly name: 'traceidratio' | 'parentbased_traceidratio'; readonly ratio: number };

/** A variable that was set but not followed, and why (logged as `tracing.setting_ignored`). */
export interface IgnoredSetting {
  readonly variable: TracingEnvName;
  readonly reason: string;
}

export type TracingPlan =
  | {
      readonly kind: 'off';
      readonly why: 'no_endpoint' | 'sdk_disabled' | 'no_otlp_exporter' | 'bad_endpoint';
      readonly ignored: readonly IgnoredSetting[];
    }
  | {
      readonly kind: 'otlp';
      /** Where spans are POSTed (OTLP over HTTP, protobuf). */
      readonly tracesUrl: string;
      readonly serviceName: string;
      readonly sampler: SamplerPlan;
      readonly ignored: readonly IgnoredSetting[];
    };

export interface TracingPlanOptions {
  /** `service.name` when `OTEL_SERVICE_NAME` is unset: the process's own name. */
  readonly serviceName?: string;
}

export const DEFAULT_TRACING_PLAN_OPTIONS = {
  serviceName: 'ebb',
} as const satisfies Required<TracingPlanOptions>;

/** The SDK's default sampler: sample new traces, follow the caller's decision for the rest. */
const DEFAULT_SAMPLER = { name: 'parentbased_always_on' } as const satisfies SamplerPlan;
const PROTOCOL = 'http/protobuf';

/** The plan the variables ask for; pure, so every setting's meaning is tested without a process. */
export function planTracing(env: TracingEnv, options: TracingPlanOptions = {}): TracingPlan {
  const set = (name: TracingEnvName): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const ignored: IgnoredSetting[] = [];
  if (set('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') {
    return { kind: 'off', why: 'sdk_disabled', ignored };
  }
  const exporters = (set('OTEL_TRACES_EXPORTER') ?? 'otlp').split(',').map((e) => e.trim().toLowerCase());
  const others = exporters.filter((e) => e !== 'otlp' && e !== 'none' && e !== '');
  if (others.length > 0) {
    ignored.push({
      variable: 'OTEL_TRACES_EXPORTER',
      reason: `Ebb ships the otlp exporter only, not ${others.join(', ')}`,
    });
  }
  if (!exporters.includes('otlp')) return { kind: 'off', why: 'no_otlp_exporter', ignored };

  const endpoint = tracesEndpoint(
    set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
    set('OTEL_EXPORTER_OTLP_ENDPOINT'),
  );
  if (endpoint === undefined) return { kind: 'off', why: 'no_endpoint', ignored };
  if (!isHttpUrl(endpoint.url)) {
    ignored.push({ variable: endpoint.from, reason: 'is not an http:// or https:// URL: tracing stays off' });
    return { kind: 'off', why: 'bad_endpoint', ignored };
  }

  const protocolVariable = set('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = set(protocolVariable);
  if (protocol !== undefined && protocol !== PROTOCOL) {
    ignored.push({ variable: protocolVariable, reason: `Ebb exports ${PROTOCOL} only, not ${protocol}` });
  }

  return {
    kind: 'otlp',
    tracesUrl: endpoint.url,
    serviceName: set('OTEL_SERVICE_NAME') ?? options.serviceName ?? DEFAULT_TRACING_PLAN_OPTIONS.serviceName,
    sampler: samplerPlan(set('OTEL_TRACES_SAMPLER'), set('OTEL_TRACES_SAMPLER_ARG'), ignored),
    ignored,
  };
}

function tracesEndpoint(
  traces: string | undefined,
  base: string | undefined,
): { readonly url: string; readonly from: TracingEnvName } | undefined {
  if (traces !== undefined) return { url: traces, from: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' };
  if (base === undefined) return undefined;
  return { url: `${base.endsWith('/') ? base : `${base}/`}v1/traces`, from: 'OTEL_EXPORTER_OTLP_ENDPOINT' };
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function samplerPlan(
  name: string | undefined,
  arg: string | undefined,
  ignored: IgnoredSetting[],
): SamplerPlan {
  if (name === undefined) return DEFAULT_SAMPLER;
  const sampler = SAMPLERS.find((s) => s === name.toLowerCase());
  if (sampler === undefined) {
    ignored.push({
      variable: 'OTEL_TRACES_SAMPLER',
      reason: `${name} is not one of ${SAMPLERS.join(', ')}: ${DEFAULT_SAMPLER.name} instead`,
    });
    return DEFAULT_SAMPLER;
  }
  if (sampler !== 'traceidratio' && sampler !== 'parentbased_traceidratio') return { name: sampler };
  return { name: sampler, ratio: samplerRatio(arg, ignored) };
}

function samplerRatio(arg: string | undefined, ignored: IgnoredSetting[]): number {
  if (arg === undefined) return 1;
  const ratio = Number(arg);
  if (Number.isFinite(ratio) && ratio >= 0 && ratio <= 1) return ratio;
  ignored.push({
    variable: 'OTEL_TRACES_SAMPLER_ARG',
    reason: `${arg} is not a ratio from 0 to 1: 1 instead`,
  });
  return 1;
}
