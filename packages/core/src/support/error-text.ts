/**
 * An error as one line of text: the one way Ebb writes an error down where a person or the model
 * reads it (`/healthz`, a degraded platform, an MCP server's last error, a tool's failure, a job's
 * failure reason, a dead-lettered message, the adapters' wrapped errors). Logs keep the whole error
 * under `err`; this is the sentence beside it.
 */

/**
 * The message's first line, else the error's code (a refused connection to `localhost` has no
 * message), else its name; a thrown value that is not an `Error`, as a string. Credentials in URLs
 * are masked: `postgres://user:secret@host` → `postgres://user:***@host`.
 */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return maskCredentials(String(err));
  const text = err.message.split('\n', 1)[0] || codeOf(err) || err.name;
  return maskCredentials(text);
}

/** `code: text` for an error that carries a string code (an `EbbError`, a pg or Node error), else the text. */
export function codedErrorText(err: unknown): string {
  const code = err instanceof Error ? codeOf(err) : undefined;
  const text = errorText(err);
  return code === undefined || text === code ? text : `${code}: ${text}`;
}

/**
 * An error as a code alone, where its message must not go (a metric label, a span's status: a
 * message can quote a model's refusal or what was summarized): its own string `code`, `aborted`
 * for an abort, else `error`.
 */
export function errorCodeOf(err: unknown): string {
  if (err instanceof Error) return codeOf(err) ?? (err.name === 'AbortError' ? 'aborted' : 'error');
  return 'error';
}

function codeOf(err: Error): string | undefined {
  return 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

function maskCredentials(text: string): string {
  return text.replace(/(\/\/[^/:@\s]*):[^@\s]*@/g, '$1:***@');
}
