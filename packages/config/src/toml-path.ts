/**
 * How config problems name things: TOML paths (`channels."slack:T1:*".compaction.background_threshold`)
 * and values (`"socket"`, `0.85`, `[ "U1", "U2" ]`) written the way an operator would type them.
 */

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** One key as TOML writes it: bare when it can be, quoted otherwise. */
export function formatTomlKey(key: string): string {
  return BARE_KEY.test(key) ? key : JSON.stringify(key);
}

/** A dotted TOML path; array positions print as `[i]`. */
export function formatTomlPath(segments: readonly (string | number)[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += (out === '' ? '' : '.') + formatTomlKey(segment);
  }
  return out;
}

/** A value as it would appear on the right of `=`; `nothing` for a missing one. */
export function formatTomlValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) {
    return value.length === 0 ? '[]' : `[ ${value.map((item) => formatTomlValue(item)).join(', ')} ]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value).map(
      ([key, item]) => `${formatTomlKey(key)} = ${formatTomlValue(item)}`,
    );
    return entries.length === 0 ? '{}' : `{ ${entries.join(', ')} }`;
  }
  return String(value);
}
