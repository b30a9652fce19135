/**
 * The tests' `Logger` that keeps its lines. It lives in `@ebb/core/testing`, where core's own tests
 * (which cannot import this package: it imports core) use it too; this path stays for the rest.
 */
export { type LogEntry, type LogLevel, RecordingLogger } from '@ebb/core/testing';
