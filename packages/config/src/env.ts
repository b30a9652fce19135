/**
 * The environment Ebb reads: connection strings and secrets. This is the only place in the repo
 * that touches `process.env`; everything else receives these values through options. Secrets are
 * never logged (see `@ebb/logger`) and never live in config.toml.
 */
import { z } from 'zod';
import { ConfigError } from './config-error.js';

/** Where Ebb looks for Redis when `REDIS_URL` is unset. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

const envSchema = z.object({
  /** Postgres connection string. Unset: embedded PGlite under EBB_DATA_DIR. */
  DATABASE_URL: z.string().min(1).optional(),
  /** Redis connection string. Unset: `DEFAULT_REDIS_URL` when reachable, else the in-process queue. */
  REDIS_URL: z.string().min(1).optional(),
  /** Prefix of every Redis key and the BullMQ queue, so several Ebb deployments can share one Redis. */
  EBB_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .default('ebb'),
  /** OpenAI (or compatible) API key. Unset and no [llm] base_url: offline mode. */
  OPENAI_API_KEY: z.string().min(1).optional(),
  /** Slack bot token (xoxb-…). Unset: no Slack. */
  SLACK_BOT_TOKEN: z.string().min(1).optional(),
  /** Slack app-level token (xapp-…) for Socket Mode. */
  SLACK_APP_TOKEN: z.string().min(1).optional(),
  /** Slack signing secret, for the Events API over HTTP. */
  SLACK_SIGNING_SECRET: z.string().min(1).optional(),
  /** Discord bot token. Unset: no Discord. */
  DISCORD_TOKEN: z.string().min(1).optional(),
  /**
   * Port of `ebb worker`'s /metrics and /healthz. Unset: 9464, or a free port when another worker on
   * the host has 9464 (logged). Set: that port, and a worker that cannot have it does not start.
   */
  EBB_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /**
   * Address `ebb worker`'s /metrics and /healthz listen on. Unset: 127.0.0.1, this machine only. Beyond
   * loopback (`0.0.0.0`, `::`, a LAN address, so a Prometheus in another container can scrape it),
   * /metrics takes `Bearer <EBB_METRICS_TOKEN>` as the bot's does, /healthz stays open, and without
   * EBB_METRICS_TOKEN the worker refuses to start.
   */
  EBB_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Token for every route of the bot's HTTP server but `/healthz`: the dashboard, the queue board and
   * the web channel API. Send it as `Authorization: Bearer …` or open the page once with `?token=…`.
   * Unset: they answer loopback only, and a `[web] host` beyond loopback refuses to start.
   */
  EBB_ADMIN_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters (for example: openssl rand -hex 24)')
    .optional(),
  /**
   * A read-only token for `/metrics`, the bot's and `ebb worker`'s (Prometheus: `authorization:
   * { credentials: … }`). Set: `/metrics` wants it from every client, loopback too (the bot's also
   * takes the admin token). Unset: the worker's answers loopback clients; the bot's, the admin token,
   * or loopback clients when there is none.
   */
  EBB_METRICS_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters (for example: openssl rand -hex 24)')
    .optional(),
  /** Where embedded PGlite keeps its data. */
  EBB_DATA_DIR: z.string().min(1).default('./.ebb'),
  /** Path of config.toml (also `--config`). */
  EBB_CONFIG: z.string().min(1).optional(),
  /** pino level: fatal, error, warn, info, debug, trace. Message text is logged only at debug. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `production` logs JSON lines; anything else pretty-prints in a terminal. */
  NODE_ENV: z.string().optional(),
  // OpenTelemetry's own variables (docs/traces.md): with no endpoint set, no trace is kept.
  /** Where spans go over OTLP/HTTP (`…/v1/traces` is appended); unset with the next: tracing off. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().min(1).optional(),
  /** The traces endpoint itself, used as given; wins over OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().min(1).optional(),
  /** `http/protobuf` (the default, the only one Ebb sends). */
  OTEL_EXPORTER_OTLP_PROTOCOL: z.string().min(1).optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.string().min(1).optional(),
  /** `service.name` of the spans; default `ebb` (the bot) and `ebb-worker`. */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  /** `parentbased_always_on` by default; `traceidratio` and the rest as the specification names them. */
  OTEL_TRACES_SAMPLER: z.string().min(1).optional(),
  /** The sampler's argument (the ratio of `traceidratio`). */
  OTEL_TRACES_SAMPLER_ARG: z.string().min(1).optional(),
  /** `true` turns tracing off whatever else is set. */
  OTEL_SDK_DISABLED: z.string().min(1).optional(),
  /** `otlp` (the default) or `none`. */
  OTEL_TRACES_EXPORTER: z.string().min(1).optional(),
});

export type EbbEnv = z.infer<typeof envSchema>;

/** The name of every variable Ebb reads: what the deployment files (compose, Kubernetes) are checked against. */
export const ENV_NAMES = Object.keys(envSchema.shape) as readonly (keyof EbbEnv)[];

/** Reads and checks the environment; a bad value is a `ConfigError` naming the variable. */
export function loadEnv(env: NodeJS.ProcessEnv = process.env): EbbEnv {
  // An empty variable (`FOO=` in a shell, `FOO: ""` in compose) means unset.
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = envSchema.safeParse(set);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => {
    const name = String(i.path[0] ?? '');
    // Only non-secret values are echoed back.
    return {
      file: 'environment',
      path: name,
      rule: i.message,
      found: name === 'LOG_LEVEL' ? env[name] : '(hidden)',
    };
  });
  throw new ConfigError(issues);
}
