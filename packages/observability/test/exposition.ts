/**
 * Reads samples back out of Prometheus text exposition, so tests assert values and labels rather
 * than the formatting of prom-client.
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key ?? ''] = value ?? '';
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return samples;
}

/** The samples of `name` whose labels include `labels`. */
export function samples(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return parseExposition(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** The one sample of `name` with exactly these labels (besides `le` for none); undefined when absent. */
export function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = parseExposition(text).filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}
