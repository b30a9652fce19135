/**
 * Why Ebb could not start, as one log line an operator can act on: the error's code, its message
 * (never a stack) and a hint that tells a name that does not resolve, a service that does not
 * answer or a port another process holds from a credential that was refused.
 */
import { BotError } from '../errors.js';

export interface StartFailure {
  /** What kind of failure: retrying helps a DNS or network failure, not a refused credential or a taken port. */
  readonly kind: 'dns' | 'network' | 'address_in_use' | 'refused' | 'other';
  readonly error: string;
  readonly cause: string;
  readonly hint: string;
}

/** A start refused by Ebb itself (an unsafe setting), with the hint that fixes it. */
export class StartRefusedError extends BotError {
  readonly hint: string;
  constructor(message: string, hint: string) {
    super(message, { code: 'start_refused' });
    this.hint = hint;
  }
}

const DNS = new Set(['ENOTFOUND', 'EAI_AGAIN']);
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);
const ADDRESS_IN_USE = 'EADDRINUSE';
const REJECTED =
  /invalid_auth|not_authed|token_revoked|account_inactive|TOKEN_INVALID|password authentication failed|401|403/i;

export function describeStartFailure(err: unknown): StartFailure {
  if (err instanceof StartRefusedError) {
    return { kind: 'other', error: err.code, cause: err.message, hint: err.hint };
  }
  const chain: {
    code?: unknown;
    message?: unknown;
    hostname?: unknown;
    port?: unknown;
    cause?: unknown;
  }[] = [];
  for (
    let e: unknown = err;
    e && typeof e === 'object' && chain.length < 8;
    e = (e as { cause?: unknown }).cause
  ) {
    chain.push(e as (typeof chain)[number]);
  }
  const codes = chain.map((e) => (typeof e.code === 'string' ? e.code : '')).filter(Boolean);
  const messages = chain.map((e) => (typeof e.message === 'string' ? e.message : '')).filter(Boolean);
  const root = messages.at(-1) ?? String(err);
  const host = chain.map((e) => e.hostname).find((h) => typeof h === 'string');
  const dns = codes.find((c) => DNS.has(c));
  const network = codes.find((c) => NETWORK.has(c));
  const inUse = chain.find((e) => e.code === ADDRESS_IN_USE);
  const kind = dns
    ? 'dns'
    : network
      ? 'network'
      : inUse
        ? 'address_in_use'
        : messages.some((m) => REJECTED.test(m))
          ? 'refused'
          : 'other';
  const port = typeof inUse?.port === 'number' ? `port ${inUse.port}` : 'the port';
  const hint = {
    dns: `a DNS failure: ${host ?? 'a host'} does not resolve from here; check the URL and this machine's DNS, not the credentials`,
    network: `a network failure (${network}): nothing answers at that address; check that the service runs and the URL, not the credentials`,
    address_in_use: `${port} is taken by another process: give this process its own port ([web] port, or EBB_METRICS_PORT for ebb worker)`,
    refused: 'the credential was refused: check the token or password in the environment',
    other: 'see the cause',
  }[kind];
  return {
    kind,
    error: dns ?? network ?? (inUse ? ADDRESS_IN_USE : codes[0]) ?? 'start_failed',
    cause: root,
    hint,
  };
}
