/**
 * What `bin/ebb.mjs` does before it loads the CLI, for `ebb-process.ts` (which starts Ebb without
 * the CLI): with an OTLP endpoint set, Postgres and Redis get OpenTelemetry's instrumentations
 * before anything imports them. Loaded with `node --import`; without an endpoint it does nothing.
 */
import { instrumentLibraries } from '@ebb/observability/instrument';

await instrumentLibraries('start', process.env);
