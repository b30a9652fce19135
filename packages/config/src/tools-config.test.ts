import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { mcpServerSpecs } from './mcp-server-specs.js';
import { parseConfig } from './parse-config.js';
import { explainChannel, resolveChannel } from './resolve-channel.js';

function messages(text: string): string[] {
  try {
    parseConfig(text, 'config.toml');
  } catch (error) {
    if (error instanceof ConfigError) return error.message.split('\n');
    throw error;
  }
  throw new Error('expected a ConfigError');
}

const SERVERS = `
  [mcp.servers.github]
  url = "https://mcp.example.com/github"
  headers = { Authorization = "Bearer \${GITHUB_TOKEN}", X-Client = "ebb" }

  [mcp.servers.ci]
  command = "npx"
  args = ["-y", "ci-mcp"]
  env = { CI_TOKEN = "env:EBB_CI_TOKEN", LOG_LEVEL = "warn" }
`;

describe('[tools] and [mcp.servers]', () => {
  it('allows the built-in history tools everywhere by default, 6 model calls a turn, 30 s a call', () => {
    const tools = resolveChannel(parseConfig('', 'config.toml'), 'discord:G:C').tools;
    expect(tools).toEqual({ allow: ['search_history', 'read_history'], maxSteps: 6, callTimeoutMs: 30_000 });
  });

  it('layers allow like any key: the most specific place replaces the whole list', () => {
    const config = parseConfig(
      `${SERVERS}
      [tools]
      max_steps = 4
      [slack.tools]
      allow = ["search_history"]
      [channels."slack:T1:C-eng".tools]
      allow = ["github.*", "search_history", "read_history"]
      call_timeout_seconds = 5`,
      'config.toml',
    );
    expect(resolveChannel(config, 'web:x').tools.allow).toEqual(['search_history', 'read_history']);
    expect(resolveChannel(config, 'slack:T1:C-other').tools).toEqual({
      allow: ['search_history'],
      maxSteps: 4,
      callTimeoutMs: 30_000,
    });
    expect(resolveChannel(config, 'slack:T1:C-eng').tools).toEqual({
      allow: ['github.*', 'search_history', 'read_history'],
      maxSteps: 4,
      callTimeoutMs: 5_000,
    });
    const explained = explainChannel(config, 'slack:T1:C-eng').settings.find((s) => s.key === 'tools.allow');
    expect(explained?.source).toBe('[channels."slack:T1:C-eng"]');
  });

  it('names the file, the TOML path and the rule for an allow pattern of an unknown server or tool', () => {
    expect(
      messages(`${SERVERS}
      [web.tools]
      allow = ["search_history", "gitbuh.*"]
      [channels."slack:*".tools]
      allow = ["search_histroy", "*.read_*", "*"]`),
    ).toEqual([
      'config.toml: web.tools.allow[1]: must name a server of [mcp.servers]: there is no [mcp.servers.gitbuh] (servers: github, ci); found "gitbuh.*"',
      'config.toml: channels."slack:*".tools.allow[0]: must name a built-in tool (search_history, read_history) or an MCP server\'s tool as server.tool; found "search_histroy"',
    ]);
    expect(messages('[tools]\nallow = ["jira.search"]')).toEqual([
      'config.toml: tools.allow[0]: must name a server of [mcp.servers]: there is no [mcp.servers.jira] (no [mcp.servers] are configured); found "jira.search"',
    ]);
  });

  it('rejects a server with both or neither of command and url, keys of the other kind, and bad names', () => {
    expect(
      messages(`
      [mcp.servers.both]
      command = "x"
      url = "http://127.0.0.1:1/mcp"
      [mcp.servers.neither]
      args = ["x"]
      [mcp.servers.http]
      url = "http://127.0.0.1:1/mcp"
      env = { A = "b" }
      [mcp.servers.my__server]
      command = "x"
      [tools]
      allow = ["has space", "a.b.c"]
      max_steps = 0
      call_timeout_seconds = 601`),
    ).toEqual([
      'config.toml: tools.allow[0]: must be a built-in tool name or server.tool (letters, digits, _ - and * globs); found "has space"',
      'config.toml: tools.max_steps: must be an integer from 1 to 50; found 0',
      'config.toml: tools.call_timeout_seconds: must be a number of seconds above 0 and at most 600; found 601',
      'config.toml: mcp.servers.both.url: must set exactly one of command (a server over stdio) and url (a streamable HTTP server); found "http://127.0.0.1:1/mcp"',
      'config.toml: mcp.servers.neither: must set exactly one of command (a server over stdio) and url (a streamable HTTP server); found { args = [ "x" ] }',
      'config.toml: mcp.servers.http.env: is only for a server with command; found { A = "b" }',
      'config.toml: mcp.servers.my__server: invalid key: must be letters, digits, - and single _ (at most 32, no __), so NAME.tool maps to the wire; found "my__server"',
    ]);
  });

  it('fills env and header values from the environment, and lists the variables that are not set', () => {
    const config = parseConfig(SERVERS, 'config.toml');
    expect(mcpServerSpecs(config, { GITHUB_TOKEN: 'ghp_1' })).toEqual([
      {
        name: 'github',
        transport: 'http',
        url: 'https://mcp.example.com/github',
        headers: { Authorization: 'Bearer ghp_1', 'X-Client': 'ebb' },
        missingEnv: [],
      },
      {
        name: 'ci',
        transport: 'stdio',
        command: 'npx',
        args: ['-y', 'ci-mcp'],
        env: { CI_TOKEN: '', LOG_LEVEL: 'warn' },
        missingEnv: ['EBB_CI_TOKEN'],
      },
    ]);
  });
});
