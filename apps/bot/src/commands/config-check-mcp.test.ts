/** `ebb config check` with `[mcp.servers]`: servers started briefly and listed, patterns checked against their tools. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FakeMcpHttpServer, fakeMcpStdioCommand } from '@ebb/testing/mcp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configCheck } from './config-check.js';

let cwd: string;
beforeEach(async () => {
  cwd = await mkdtemp(path.join(tmpdir(), 'ebb-config-check-mcp-'));
});
afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

async function check(toml: string) {
  await writeFile(path.join(cwd, 'config.toml'), toml);
  const out: string[] = [];
  const err: string[] = [];
  const code = await configCheck({}, { out: (l) => out.push(l), err: (l) => err.push(l) }, { cwd, env: {} });
  return { code, out, err };
}

const { command, args } = fakeMcpStdioCommand({ tools: ['echo', 'lookup'] });
const SERVERS = [
  '[mcp.servers.dir]',
  `command = ${JSON.stringify(command)}`,
  `args = ${JSON.stringify(args)}`,
  '[mcp.servers.gh]',
  'url = "http://127.0.0.1:9/mcp"',
  // The placeholder as the operator writes it in the file.
  `headers = { Authorization = "Bearer $${'{'}GITHUB_TOKEN}" }`,
].join('\n');

describe('ebb config check with MCP servers', () => {
  it('lists each server with its state and warns about a pattern that matches none of its tools', async () => {
    const { code, out, err } = await check(
      `${SERVERS}\n[tools]\nallow = ["search_history", "dir.lookup", "dir.serch_*", "gh.*"]`,
    );
    expect(err).toEqual([]);
    expect(code).toBe(0);
    const from = out.indexOf('MCP servers (started for this check, up to 5 s each):');
    expect(from).toBeGreaterThan(0);
    expect(out[from + 1]).toMatch(/^ {2}dir\s+stdio\s+\S.*\s+ready, 2 tools$/);
    expect(out[from + 2]).toMatch(
      /^ {2}gh\s+http\s+http:\/\/127\.0\.0\.1:9\/mcp\s+failed: environment variable GITHUB_TOKEN not set$/,
    );
    expect(out.slice(from + 3)).toEqual([
      'warning: MCP server gh could not start, so its tools are not checked (environment variable GITHUB_TOKEN not set)',
      'warning: tools.allow[2]: "dir.serch_*" matches no tool of dir (it has dir.echo, dir.lookup)',
    ]);
  });

  it('fails on a pattern that names no configured server, naming the file, the path and the rule', async () => {
    const { code, err } = await check(`${SERVERS}\n[channels."slack:*".tools]\nallow = ["github.*"]`);
    expect(code).toBe(1);
    expect(err[0]).toBe(
      'config.toml: channels."slack:*".tools.allow[0]: must name a server of [mcp.servers]: there is no [mcp.servers.github] (servers: dir, gh); found "github.*"',
    );
  });

  it('warns about an allow list that lets a channel use more than the 128 tools a request may offer', async () => {
    // 19 servers of 7 tools each (all one fake) and the 2 built-ins: 135 tools.
    const http = await FakeMcpHttpServer.start();
    try {
      const servers = Array.from({ length: 19 }, (_, i) => `[mcp.servers.s${i + 10}]\nurl = "${http.url}"`);
      const { code, out } = await check(
        `${servers.join('\n')}\n[tools]\nallow = ["*"]\n[channels."web:small".tools]\nallow = ["s10.*"]`,
      );
      expect(code).toBe(0);
      const warnings = out.filter((line) => line.startsWith('warning:'));
      expect(warnings).toEqual([
        expect.stringMatching(
          /^warning: tools\.allow: allows 135 tools, more than the 128 a model can be offered; 7 are left out \(s28\.build_log, s28\.crash, /,
        ),
      ]);
    } finally {
      await http.close();
    }
  });
});
