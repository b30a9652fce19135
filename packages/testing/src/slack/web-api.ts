/**
 * The Web API methods the fake answers, with the bodies Slack returns (`{ ok: true, ... }` or
 * `{ ok: false, error }`, always HTTP 200). Only the fields Ebb and Bolt read are filled in.
 */
import type { FakeSlackChannel, FakeSlackUser, FakeWorkspace, PostedMessage } from './workspace.js';

export type WebApiArgs = Readonly<Record<string, unknown>>;
export type WebApiBody = Readonly<Record<string, unknown>>;

/** What the caller authenticated with (by token prefix, as Slack tells them apart). */
export type TokenKind = 'bot' | 'app' | 'user' | 'none';

export interface WebApiContext {
  readonly workspace: FakeWorkspace;
  readonly tokenKind: TokenKind;
  /** Issues a one-time Socket Mode URL (for `apps.connections.open`). */
  readonly openSocketUrl: () => string;
}

type Method = (args: WebApiArgs, context: WebApiContext) => WebApiBody;

/** Methods that take an app-level token (`xapp-`); every other method takes a bot token (`xoxb-`). */
const APP_TOKEN_METHODS = new Set(['apps.connections.open']);

const fail = (error: string): WebApiBody => ({ ok: false, error });

const METHODS: Readonly<Record<string, Method>> = {
  'api.test': (args) => ({ ok: true, args }),

  'auth.test': (_args, { workspace }) => {
    const id = workspace.identity;
    return {
      ok: true,
      url: `https://${id.teamDomain}.slack.com/`,
      team: id.teamName,
      user: id.botName,
      team_id: id.teamId,
      user_id: id.botUserId,
      bot_id: id.botId,
      is_enterprise_install: false,
    };
  },

  'apps.connections.open': (_args, { openSocketUrl }) => ({ ok: true, url: openSocketUrl() }),

  'chat.postMessage': (args, { workspace }) => {
    const channel = str(args.channel);
    if (!channel) return fail('channel_not_found');
    if (!workspace.channels.has(channel)) return fail('channel_not_found');
    const text = str(args.text) ?? '';
    if (text === '' && args.blocks === undefined && args.attachments === undefined) return fail('no_text');
    const threadTs = str(args.thread_ts);
    const ts = workspace.nextTs();
    workspace.messages.push({ channel, ts, text, ...(threadTs ? { threadTs } : {}) });
    // A reply clears the thread's assistant status, as on Slack.
    if (threadTs) workspace.setAssistantStatus(channel, threadTs, '', true);
    const id = workspace.identity;
    return {
      ok: true,
      channel,
      ts,
      message: {
        type: 'message',
        text,
        user: id.botUserId,
        bot_id: id.botId,
        team: id.teamId,
        ts,
        ...(threadTs ? { thread_ts: threadTs } : {}),
      },
    };
  },

  // Only the app's own messages are in `workspace.messages`; others answer as Slack does for them.
  'chat.update': (args, { workspace }) => {
    const target = postedMessage(args, workspace);
    if (typeof target === 'string') return fail(target);
    const text = str(args.text) ?? '';
    if (text === '' && args.blocks === undefined && args.attachments === undefined) return fail('no_text');
    workspace.messages[target.index] = { ...target.message, text };
    return { ok: true, channel: target.message.channel, ts: target.message.ts, text };
  },

  'chat.delete': (args, { workspace }) => {
    const target = postedMessage(args, workspace);
    if (typeof target === 'string') return fail(target);
    workspace.messages.splice(target.index, 1);
    return { ok: true, channel: target.message.channel, ts: target.message.ts };
  },

  // The AI-app surface: a status line ("is thinking…") under an assistant thread until the app
  // replies in it (or two minutes pass), and prompts offered when a thread starts.
  'assistant.threads.setStatus': (args, { workspace }) => {
    const target = assistantThread(args, workspace);
    if (typeof target === 'string') return fail(target);
    if (typeof args.status !== 'string') return fail('invalid_arguments');
    workspace.setAssistantStatus(target.channel, target.threadTs, args.status);
    return { ok: true };
  },

  'assistant.threads.setSuggestedPrompts': (args, { workspace }) => {
    const target = assistantThread(args, workspace);
    if (typeof target === 'string') return fail(target);
    const prompts = parseJsonArg(args.prompts);
    const valid =
      Array.isArray(prompts) &&
      prompts.length >= 1 &&
      prompts.length <= 4 &&
      prompts.every((p) => isRecord(p) && str(p.title) !== undefined && str(p.message) !== undefined);
    if (!valid) return fail('invalid_arguments');
    const title = str(args.title);
    workspace.suggestedPrompts.push({
      channel: target.channel,
      threadTs: target.threadTs,
      prompts: prompts.map((p) => ({ title: String(p.title), message: String(p.message) })),
      ...(title ? { title } : {}),
    });
    return { ok: true };
  },

  'chat.postEphemeral': (args, { workspace }) => {
    const channel = str(args.channel);
    const user = str(args.user);
    if (!channel || !workspace.channels.has(channel)) return fail('channel_not_found');
    if (!user || !workspace.users.has(user)) return fail('user_not_found');
    const messageTs = workspace.nextTs();
    workspace.ephemerals.push({ channel, user, text: str(args.text) ?? '', messageTs });
    return { ok: true, message_ts: messageTs };
  },

  'users.info': (args, { workspace }) => {
    const user = workspace.users.get(str(args.user) ?? '');
    return user ? { ok: true, user: userBody(user, workspace.identity.teamId) } : fail('user_not_found');
  },

  'conversations.info': (args, { workspace }) => {
    const channel = workspace.channels.get(str(args.channel) ?? '');
    return channel ? { ok: true, channel: channelBody(channel) } : fail('channel_not_found');
  },

  'reactions.add': (args, { workspace }) => {
    const target = reactionTarget(args, workspace);
    if (typeof target === 'string') return fail(target);
    const names = workspace.reactions.get(target.key) ?? new Set<string>();
    if (names.has(target.name)) return fail('already_reacted');
    names.add(target.name);
    workspace.reactions.set(target.key, names);
    return { ok: true };
  },

  'reactions.remove': (args, { workspace }) => {
    const target = reactionTarget(args, workspace);
    if (typeof target === 'string') return fail(target);
    const names = workspace.reactions.get(target.key);
    if (!names?.delete(target.name)) return fail('no_reaction');
    return { ok: true };
  },
};

/** Answers one Web API call (after the token was read); unknown methods get `unknown_method`. */
export function callWebApi(method: string, args: WebApiArgs, context: WebApiContext): WebApiBody {
  const handler = METHODS[method];
  if (!handler) return fail('unknown_method');
  if (method === 'api.test') return handler(args, context);
  if (context.tokenKind === 'none') return fail('not_authed');
  const wanted: TokenKind = APP_TOKEN_METHODS.has(method) ? 'app' : 'bot';
  if (context.tokenKind !== wanted) return fail('not_allowed_token_type');
  return handler(args, context);
}

export function tokenKind(token: string | undefined): TokenKind {
  if (!token) return 'none';
  if (token.startsWith('xapp-')) return 'app';
  if (token.startsWith('xoxb-')) return 'bot';
  return 'user';
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function reactionTarget(
  args: WebApiArgs,
  workspace: FakeWorkspace,
): { readonly key: string; readonly name: string } | string {
  const channel = str(args.channel);
  const timestamp = str(args.timestamp);
  const name = str(args.name);
  if (!channel || !workspace.channels.has(channel)) return 'channel_not_found';
  if (!timestamp) return 'no_item_specified';
  if (!name) return 'invalid_name';
  return { key: `${channel}:${timestamp}`, name };
}

function postedMessage(
  args: WebApiArgs,
  workspace: FakeWorkspace,
): { readonly index: number; readonly message: PostedMessage } | string {
  const channel = str(args.channel);
  const ts = str(args.ts);
  if (!channel || !workspace.channels.has(channel)) return 'channel_not_found';
  const index = workspace.messages.findIndex((m) => m.channel === channel && m.ts === ts);
  const message = workspace.messages[index];
  return message ? { index, message } : 'message_not_found';
}

function assistantThread(
  args: WebApiArgs,
  workspace: FakeWorkspace,
): { readonly channel: string; readonly threadTs: string } | string {
  const channel = str(args.channel_id);
  const threadTs = str(args.thread_ts);
  if (!channel || !workspace.channels.has(channel)) return 'channel_not_found';
  if (!threadTs || !/^\d+\.\d+$/.test(threadTs)) return 'invalid_thread_ts';
  return { channel, threadTs };
}

/** Arrays and objects arrive JSON-encoded in a form body (the WebClient's default), as is in JSON. */
function parseJsonArg(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function userBody(user: FakeSlackUser, teamId: string): WebApiBody {
  const realName = user.realName ?? user.name;
  return {
    id: user.id,
    team_id: teamId,
    name: user.name,
    real_name: realName,
    deleted: false,
    is_bot: user.isBot ?? false,
    is_app_user: false,
    profile: {
      real_name: realName,
      display_name: user.displayName ?? '',
      real_name_normalized: realName,
      display_name_normalized: user.displayName ?? '',
      team: teamId,
    },
  };
}

function channelBody(channel: FakeSlackChannel): WebApiBody {
  const base = { id: channel.id, created: 1_700_000_000, is_archived: false };
  switch (channel.type) {
    case 'im':
      return { ...base, is_im: true, is_org_shared: false, user: channel.user ?? '' };
    case 'mpim':
      return {
        ...base,
        name: channel.name,
        is_channel: false,
        is_group: false,
        is_mpim: true,
        is_private: true,
      };
    case 'group':
      return {
        ...base,
        name: channel.name,
        is_channel: false,
        is_group: true,
        is_mpim: false,
        is_private: true,
      };
    case 'channel':
      return {
        ...base,
        name: channel.name,
        is_channel: true,
        is_group: false,
        is_mpim: false,
        is_private: false,
      };
    default: {
      const exhaustive: never = channel.type;
      return exhaustive;
    }
  }
}
