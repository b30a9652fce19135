/**
 * Tools the chat model may call in a channel: the built-in ones over the channel's own archive
 * (`search_history`, `read_history`) and those of the MCP servers in `config.toml`. The bot's
 * tool-calling loop sees only this port; where a tool comes from is the provider's business.
 *
 * A tool never throws at the loop: a failure (bad arguments, a server that crashed, a timeout) is a
 * `ToolOutcome` with `isError`, which the model reads like any result and can act on.
 */

/** A tool as the model is offered it (OpenAI's function tool). */
export interface ToolSpec {
  /** Unique among a channel's tools; `server.tool` for an MCP server's tool, bare for built-ins. */
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** What a call gave back, as the text the model reads. */
export interface ToolOutcome {
  readonly text: string;
  /** The tool failed; `text` says how, in a sentence the model can read. */
  readonly isError: boolean;
}

export interface ToolCallContext {
  /** The channel the call is made in: built-in tools read only its archive. */
  readonly channelKey: string;
  /** Aborted when the per-call timeout passes or the bot stops. */
  readonly signal: AbortSignal;
}

/** One callable tool. */
export interface Tool {
  readonly spec: ToolSpec;
  /** `args` is the parsed arguments object the model sent (not yet checked against the schema). */
  call(args: unknown, context: ToolCallContext): Promise<ToolOutcome>;
}

/**
 * An MCP server as Ebb starts it, secrets resolved from the environment (`@ebb/config`'s
 * `mcpServerSpecs` makes it, `@ebb/tools` starts it). `missingEnv` names variables the file refers to
 * that are not set: such a server fails to start, saying which. The resolved values are secrets:
 * hand them to the transport, never log them.
 */
export type McpServerSpec =
  | {
      readonly name: string;
      readonly transport: 'stdio';
      readonly command: string;
      readonly args: readonly string[];
      /** Added to the SDK's safe default environment (PATH, HOME, …); Ebb's own is not passed on. */
      readonly env: Readonly<Record<string, string>>;
      readonly missingEnv: readonly string[];
    }
  | {
      readonly name: string;
      readonly transport: 'http';
      readonly url: string;
      readonly headers: Readonly<Record<string, string>>;
      readonly missingEnv: readonly string[];
    };
