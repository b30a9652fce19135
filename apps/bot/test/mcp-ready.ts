/**
 * Waits until a started Ebb's `/healthz` reports each named MCP server `ready`: a server is spawned
 * in the background at start, and a test that offers its tools must not run before they are there.
 */
import { vi } from 'vitest';

export async function mcpServersReady(webUrl: string, names: readonly string[]): Promise<void> {
  await vi.waitFor(
    async () => {
      const health = (await (await fetch(`${webUrl}/healthz`)).json()) as {
        mcp: Record<string, { status: string } | undefined>;
      };
      for (const name of names)
        if (health.mcp[name]?.status !== 'ready') throw new Error(`${name} not ready`);
    },
    { timeout: 20_000 },
  );
}
