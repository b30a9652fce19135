/**
 * The tables only the top level of the file has, which no platform or channel table overrides:
 * `[prices."<model>"]` (what costs are estimated and counted with), `[shutdown]` and the MCP
 * servers of `[mcp.servers.NAME]` (whose tools `[tools] allow` names as `NAME.tool`).
 */
import { z } from 'zod';
import { mustBe, positiveInt, TABLE, text } from './schema-leaves.js';

export const priceSchema = z.strictObject(
  {
    /** USD per million input tokens. */
    input_per_mtok: z.number(mustBe('a price >= 0')).nonnegative(mustBe('a price >= 0')),
    /** USD per million input tokens the provider served from its prompt cache; unset: `input_per_mtok`. */
    cached_input_per_mtok: z.number(mustBe('a price >= 0')).nonnegative(mustBe('a price >= 0')).optional(),
    /** USD per million output tokens. */
    output_per_mtok: z.number(mustBe('a price >= 0')).nonnegative(mustBe('a price >= 0')),
  },
  TABLE,
);
export type Price = z.output<typeof priceSchema>;

/** How the process stops on SIGTERM or SIGINT (see docs/operations.md, "Stopping"). */
export const shutdownSchema = z.strictObject(
  {
    /** Seconds the turns already taken get to finish and answer before the process closes anyway. */
    grace_seconds: positiveInt().default(20),
  },
  TABLE,
);
/**
 * `[mcp.servers.NAME]`: an MCP server whose tools the model may call as `NAME.tool` (where `[tools]
 * allow` lets it). Either a process Ebb starts and talks to over stdio (`command`, `args`, `env`) or
 * a streamable HTTP endpoint (`url`, `headers`). Values of `env` and `headers` may name environment
 * variables: `"env:NAME"` is the variable's value, `"Bearer ${NAME}"` puts it inside a text; secrets
 * belong there, never in the file. A stdio server gets only the safe basics of Ebb's environment
 * (PATH, HOME, …) plus its `env`.
 */
const SERVER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$/;
const serverName = () =>
  z
    .string()
    .regex(
      SERVER_NAME,
      'must be letters, digits, - and single _ (at most 32, no __), so NAME.tool maps to the wire',
    );
const ENV_VALUE = 'a string: a literal, "env:NAME" or text with $' + '{NAME}';
const envValues = () => z.record(z.string(), z.string(mustBe(ENV_VALUE)), TABLE);

export const mcpServerSchema = z
  .strictObject(
    {
      /** stdio: the program to start. */
      command: text('a non-empty command').optional(),
      args: z.array(z.string(mustBe('a string')), mustBe('a list of strings')).optional(),
      /** stdio: variables for the process; `"env:NAME"` / `"${NAME}"` take them from Ebb's environment. */
      env: envValues().optional(),
      /** streamable HTTP: the MCP endpoint. */
      url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
      /** streamable HTTP: request headers; `"env:NAME"` / `"Bearer ${NAME}"` from the environment. */
      headers: envValues().optional(),
    },
    TABLE,
  )
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: server.url === undefined ? [] : ['url'],
        message: 'must set exactly one of command (a server over stdio) and url (a streamable HTTP server)',
      });
      return;
    }
    const misplaced = server.url === undefined ? ['headers'] : ['args', 'env'];
    for (const key of misplaced) {
      if ((server as Record<string, unknown>)[key] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `is only for ${key === 'headers' ? 'a server with url' : 'a server with command'}`,
        });
      }
    }
  });
export type McpServerSection = z.output<typeof mcpServerSchema>;

export const mcpSchema = z.strictObject(
  { servers: z.record(serverName(), mcpServerSchema, TABLE).default({}) },
  TABLE,
);
export type McpSection = z.output<typeof mcpSchema>;

export type ShutdownSection = z.output<typeof shutdownSchema>;
