/**
 * Route patterns as the fake writes them: `channels/:id/messages` (a leading `/` is allowed), where a
 * `:name` segment matches any one segment and every other segment matches itself.
 */

/** `parts` is a route without `/api/v10`, split on `/` with the empty first segment dropped. */
export function matchesRoute(pattern: string, parts: readonly string[]): boolean {
  const want = pattern.replace(/^\//, '').split('/');
  return want.length === parts.length && want.every((w, i) => w.startsWith(':') || w === parts[i]);
}

/** `/channels/123/messages` as `['channels', '123', 'messages']`. */
export function routeParts(route: string): string[] {
  return route.split('/').slice(1);
}
