import path from 'node:path';
import {
  allowPatternsOf,
  ConfigError,
  type ConfigIssue,
  checkChannel,
  DEFAULTS_CHANNEL_KEY,
  DERIVED_DEFAULTS,
  type EbbEnv,
  explainChannel,
  formatConfigIssue,
  formatTomlValue,
  loadConfig,
  loadEnv,
  mcpServerSpecs,
  type ResolvedMcpServer,
  resolveChannel,
} from '@ebb/config';
import { ByteTokenizer, HISTORY_TOOL_NAMES, SILENT_LOGGER } from '@ebb/core';
import type * as ToolsModule from '@ebb/tools';
import { channelPromptMeasure } from '../status/prompt-measure.js';
import type { CommandIo } from './io.js';

export interface ConfigCheckArgs {
  /** `--config PATH`; otherwise `EBB_CONFIG`, otherwise `./config.toml`. */
  readonly config?: string | undefined;
  /** `--channel KEY`; `defaults` (the top-level sections alone) when absent. */
  readonly channel?: string | undefined;
}

export interface ConfigCheckEnv {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
}

const MAX_VALUE_WIDTH = 60;
/** Hosts `exposure` (@ebb/web) takes for loopback; it decides every other one. */
const SURELY_LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '::1']);
/**
 * Whether an allow pattern matches any tool can only be known from the running server, so the check
 * starts each configured server once, bounded by this, and stops it again.
 */
const MCP_CHECK_TIMEOUT_MS = 5_000;

/**
 * `ebb config check [--config PATH] [--channel KEY]`: loads and validates the config, then prints what
 * the channel resolves to, one row per setting with its TOML key, value and source. Returns the exit
 * code: 0 when valid, 1 with every problem on `err` when not. Each `io` call is one line.
 *
 * It also prints where the bot's HTTP server listens (`[web] host` and `port`) and whether
 * EBB_ADMIN_TOKEN is set, never its value; settings `ebb start` would refuse or warn about (a host
 * beyond loopback without the token, `[web] public_api`) are warnings, decided by the same `exposure`
 * the start uses: the token may be set only where Ebb runs.
 *
 * With `[mcp.servers]`, each server is started once (up to 5 s) and listed with its state; a server
 * that cannot start, and an allow pattern that matches no tool of its server, are warnings (exit 0:
 * a server may need what only production has), and so is an allow list that lets a channel use more
 * than the 128 tools a request may offer. A pattern naming an unknown server is an error of the
 * file itself, reported with the others.
 */
export async function configCheck(
  args: ConfigCheckArgs,
  io: CommandIo,
  options: ConfigCheckEnv = {},
): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  let config: Awaited<ReturnType<typeof loadConfig>>;
  try {
    config = await loadConfig({
      cwd,
      ...(args.config !== undefined && { path: args.config }),
      ...(options.env !== undefined && { env: options.env }),
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const line of error.message.split('\n')) io.err(line);
    const count = error.issues.length;
    io.err(`config check failed: ${count} problem${count === 1 ? '' : 's'}`);
    return 1;
  }

  const channelKey = args.channel ?? DEFAULTS_CHANNEL_KEY;
  const file = config.file === null ? 'built-in defaults' : displayPath(cwd, config.file);
  const problems = await checkedChannel(config, channelKey, file);
  if (problems.length > 0) {
    for (const issue of problems) io.err(formatConfigIssue(issue));
    io.err(`config check failed: ${channelKey} resolves to settings that break ${problems.length} rule(s)`);
    return 1;
  }

  const explanation = explainChannel(config, channelKey);
  io.out(`config:  ${config.file === null ? 'built-in defaults (no config.toml found)' : file}`);
  io.out(
    `channel: ${channelKey}${channelKey === DEFAULTS_CHANNEL_KEY ? ' (top-level sections only, no platform or channel pattern)' : ''}`,
  );
  io.out(`layers:  ${explanation.layers.join(' < ')}`);
  let env: EbbEnv;
  try {
    env = loadEnv(options.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const line of error.message.split('\n')) io.err(line);
    io.err('config check failed: the environment ebb start would read is refused');
    return 1;
  }
  await printWeb(config, env, io);
  io.out('');
  const rows = [
    ['setting', 'value', 'source'],
    ...explanation.settings.map((row) => [
      row.key,
      clip(formatValue(row.value)),
      describeSource(row.key, row.source),
    ]),
  ];
  for (const line of alignColumns(rows)) io.out(line);
  await checkMcpServers(config, io, options.env);
  return 0;
}

/**
 * The rules `checkChannel` holds the channel to, whether a pass has room included, counted first in
 * bytes (`ByteTokenizer`): bytes bound any byte-level tokenizer's count from above, and more tokens
 * only take room, so a channel that passes in bytes passes in its model's tokens, and the encoding
 * (tens of milliseconds to load) is loaded only to count one that does not.
 */
async function checkedChannel(
  config: Awaited<ReturnType<typeof loadConfig>>,
  channelKey: string,
  file: string,
): Promise<ConfigIssue[]> {
  const settings = resolveChannel(config, channelKey);
  const bounded = checkChannel(config, channelKey, file, channelPromptMeasure(settings, new ByteTokenizer()));
  if (bounded.length === 0) return bounded;
  const { loadTokenizer } = await import('@ebb/llm');
  const tokenizer = await loadTokenizer(settings.llm.encoding);
  return checkChannel(config, channelKey, file, channelPromptMeasure(settings, tokenizer));
}

/** What the HTTP server listens on and who it answers, with a warning when `ebb start` would refuse or warn. */
async function printWeb(
  config: Awaited<ReturnType<typeof loadConfig>>,
  env: EbbEnv,
  io: CommandIo,
): Promise<void> {
  const { host, port, public_api: publicApi } = config.web;
  const adminToken = env.EBB_ADMIN_TOKEN;
  io.out(`web:     ${webUrl(host, port)} (dashboard, API, /metrics, /healthz)`);
  io.out(
    adminToken === undefined
      ? 'admin:   EBB_ADMIN_TOKEN is not set: only clients on this machine are answered'
      : 'admin:   EBB_ADMIN_TOKEN is set: every route but /healthz needs it',
  );
  // `exposure` would say private: skip loading @ebb/web (Hono, Bull Board, BullMQ) for nothing.
  if (!publicApi && (adminToken !== undefined || SURELY_LOOPBACK_HOSTS.has(host))) return;
  const { exposure } = await import('@ebb/web');
  const exposed = exposure({ host, port, adminToken, publicApi });
  switch (exposed.kind) {
    case 'private':
      return;
    case 'open_api':
      io.out(`warning: ${exposed.warning}`);
      return;
    case 'refused':
      io.out(`warning: ebb start would refuse to start here: ${exposed.reason}; ${exposed.hint}`);
      return;
  }
}

/** The server's address as a URL (an IPv6 host in brackets); a wildcard host is said to be one. */
function webUrl(host: string, port: number): string {
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return ['0.0.0.0', '::'].includes(host) ? `${url} on every interface` : url;
}

/** Starts each MCP server briefly: its state, and warnings for allow patterns that match none of its tools. */
async function checkMcpServers(
  config: Awaited<ReturnType<typeof loadConfig>>,
  io: CommandIo,
  /** What `${VAR}` in a server's settings is filled from (default: the process's, as config reads it). */
  env: NodeJS.ProcessEnv | undefined,
): Promise<void> {
  const specs = mcpServerSpecs(config, env);
  if (specs.length === 0) return;
  // Loaded only here: the MCP client is most of the package.
  const toolsPackage = await import('@ebb/tools');
  const { McpServers, patternMatchesTool, patternServer } = toolsPackage;
  const servers = new McpServers({
    servers: specs,
    logger: SILENT_LOGGER,
    startTimeoutMs: MCP_CHECK_TIMEOUT_MS,
  });
  try {
    await servers.start();
    const states = servers.states();
    const tools = servers.tools().map((tool) => tool.spec.name);
    io.out('');
    io.out(`MCP servers (started for this check, up to ${MCP_CHECK_TIMEOUT_MS / 1000} s each):`);
    const rows = specs.map((spec) => {
      const state = states[spec.name];
      const status =
        state?.status === 'ready'
          ? `ready, ${state.tools} tools`
          : `${state?.status ?? 'unknown'}: ${state?.lastError ?? ''}`;
      return [`  ${spec.name}`, spec.transport, describeTarget(spec), status];
    });
    for (const line of alignColumns(rows)) io.out(line);
    for (const spec of specs) {
      if (states[spec.name]?.status !== 'ready') {
        io.out(
          `warning: MCP server ${spec.name} could not start, so its tools are not checked (${states[spec.name]?.lastError ?? 'no answer'})`,
        );
      }
    }
    for (const { path: at, pattern } of allowPatternsOf(config)) {
      const server = patternServer(pattern);
      if (server === undefined || server.includes('*') || states[server]?.status !== 'ready') continue;
      if (!tools.some((tool) => patternMatchesTool(pattern, tool))) {
        const own = tools.filter((tool) => tool.startsWith(`${server}.`));
        io.out(
          `warning: ${at}: ${JSON.stringify(pattern)} matches no tool of ${server} (it has ${own.join(', ') || 'none'})`,
        );
      }
    }
    warnTooManyTools(config, tools, io, toolsPackage);
  } finally {
    await servers.close();
  }
}

/**
 * An allow list that lets its channels use more tools than a request may offer (of the servers that
 * started): the bot offers the first ones and leaves the rest out, decided as here (`planToolOffer`).
 */
function warnTooManyTools(
  config: Awaited<ReturnType<typeof loadConfig>>,
  mcpTools: readonly string[],
  io: CommandIo,
  {
    planToolOffer,
    MAX_TOOLS_PER_CHANNEL,
  }: Pick<typeof ToolsModule, 'planToolOffer' | 'MAX_TOOLS_PER_CHANNEL'>,
): void {
  const lists = new Map<string, string[]>();
  for (const { path: at, pattern } of allowPatternsOf(config)) {
    const list = at.replace(/\[\d+\]$/, '');
    lists.set(list, [...(lists.get(list) ?? []), pattern]);
  }
  for (const [list, allow] of lists) {
    const { offered, leftOut } = planToolOffer([...HISTORY_TOOL_NAMES, ...mcpTools], allow);
    if (leftOut.length === 0) continue;
    io.out(
      `warning: ${list}: allows ${offered.length + leftOut.length} tools, more than the ${MAX_TOOLS_PER_CHANNEL} a model can be offered; ${leftOut.length} are left out (${clip(leftOut.join(', '))})`,
    );
  }
}

/** The command line of a stdio server, or the URL of an HTTP one without credentials (never a resolved secret). */
function describeTarget(spec: ResolvedMcpServer): string {
  if (spec.transport === 'stdio') return clip([spec.command, ...spec.args].join(' '));
  const url = new URL(spec.url);
  return clip(`${url.origin}${url.pathname}`);
}

/** `default` alone says little for a derived default, so say how it was derived. */
function describeSource(key: string, source: string): string {
  const derivation = (DERIVED_DEFAULTS as Readonly<Record<string, string>>)[key];
  return source === 'default' && derivation !== undefined ? `default (${derivation})` : source;
}

function formatValue(value: unknown): string {
  return value === undefined ? '(unset)' : formatTomlValue(value);
}

function clip(text: string): string {
  return text.length <= MAX_VALUE_WIDTH ? text : `${text.slice(0, MAX_VALUE_WIDTH - 1)}…`;
}

function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows.reduce<number[]>(
    (max, row) => row.map((cell, i) => Math.max(max[i] ?? 0, cell.length)),
    [],
  );
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

function displayPath(cwd: string, file: string): string {
  const relative = path.relative(cwd, file);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}
