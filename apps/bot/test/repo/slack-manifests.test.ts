/**
 * The Slack app manifests in deploy/slack/ against the adapter they set up: the real SlackAdapter
 * (Bolt, Events API mode) on FakeSlack, with Bolt's `App` watched while the adapter registers its
 * listeners. What the manifests must say is read off the adapter, not copied from it:
 *
 * - the bot events: every event type a listener was registered for (`message.*` subscriptions all
 *   arrive as `message`), and no subscription nobody listens to;
 * - the slash commands: one per `CommandName` (a new name fails the typecheck here), each reaching
 *   `onCommand` when Slack sends it to the manifest's URL;
 * - the bot scopes: exactly those of the Web API methods the adapter called while it took a message,
 *   a mention, an assistant thread, typing and a reply, of the events, and `commands`;
 * - the request URL's path: the one the receiver serves (Slack's url_verification is answered there).
 *
 * The two manifests are the same app but for how Slack reaches Ebb.
 */
import { readFileSync } from 'node:fs';
import type { CommandInvocation, CommandName, InboundMessage } from '@ebb/core';
import { SlackAdapter } from '@ebb/slack';
import { FAKE_SLACK, FakeSlack } from '@ebb/testing/slack';
import { App } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';

/** The fields of Slack's app manifest format these tests read. */
interface SlackManifest {
  readonly display_information: { readonly name: string };
  readonly features: {
    readonly app_home?: {
      readonly messages_tab_enabled?: boolean;
      readonly messages_tab_read_only_enabled?: boolean;
    };
    readonly bot_user?: { readonly display_name: string };
    readonly assistant_view?: { readonly assistant_description: string };
    readonly slash_commands?: readonly { readonly command: string; readonly url?: string }[];
  };
  readonly oauth_config: { readonly scopes: { readonly bot: readonly string[] } };
  readonly settings: {
    readonly event_subscriptions: { readonly bot_events: readonly string[]; readonly request_url?: string };
    readonly interactivity?: { readonly is_enabled: boolean };
    readonly socket_mode_enabled?: boolean;
    readonly token_rotation_enabled?: boolean;
  };
}

function readManifest(name: string): SlackManifest {
  return parse(
    readFileSync(new URL(`../../../../deploy/slack/${name}`, import.meta.url), 'utf8'),
  ) as SlackManifest;
}

const SOCKET = readManifest('manifest.socket.yaml');
const HTTP = readManifest('manifest.http.yaml');

/** The Slack command of each of Ebb's commands; adding a `CommandName` fails the typecheck here. */
const SLASH_COMMANDS = { context: '/context', compact: '/compact' } as const satisfies Record<
  CommandName,
  string
>;

/** What Bolt's `Assistant` middleware takes (`ASSISTANT_PAYLOAD_TYPES` in @slack/bolt's Assistant.js). */
const ASSISTANT_EVENTS = ['assistant_thread_started', 'assistant_thread_context_changed', 'message'];

/** Bolt's listeners for interactive payloads: each needs interactivity turned on in the manifest. */
const INTERACTIVE_LISTENERS = ['action', 'shortcut', 'view', 'options', 'function'] as const;

/**
 * The bot scope each Web API method the adapter calls needs (docs.slack.dev/reference/methods). A
 * method missing here fails the test: add it, and its scope to both manifests.
 */
const METHOD_SCOPES: Readonly<Record<string, readonly string[]>> = {
  'auth.test': [],
  'users.info': ['users:read'],
  // A public channel's; for a private channel (groups:read) or a DM (im:read) Slack refuses, and the
  // adapter falls back on the id's first letter, which is right for both.
  'conversations.info': ['channels:read'],
  'chat.postMessage': ['chat:write'],
  'reactions.add': ['reactions:write'],
  'reactions.remove': ['reactions:write'],
  'assistant.threads.setSuggestedPrompts': ['assistant:write'],
  'assistant.threads.setStatus': ['assistant:write'],
};

/** The bot scope that lets Slack send each event. */
const EVENT_SCOPES: Readonly<Record<string, string>> = {
  app_mention: 'app_mentions:read',
  'message.channels': 'channels:history',
  'message.groups': 'groups:history',
  'message.im': 'im:history',
  'message.mpim': 'mpim:history',
  assistant_thread_started: 'assistant:write',
  assistant_thread_context_changed: 'assistant:write',
};

// docs/bot.md, "Connecting Slack and Discord": what it tells people to set up by hand.
const README_SCOPES = [
  'app_mentions:read',
  'channels:history',
  'groups:history',
  'im:history',
  'mpim:history',
  'chat:write',
  'users:read',
  'channels:read',
  'reactions:write',
  'commands',
  'assistant:write',
];
const README_EVENTS = [
  'message.channels',
  'message.groups',
  'message.im',
  'message.mpim',
  'app_mention',
  'assistant_thread_started',
  'assistant_thread_context_changed',
];

const SIGNING_SECRET = 'test-signing-secret-0123456789';

/** The event type a subscription delivers as: Bolt sees every `message.*` as `message`. */
const deliveredAs = (subscription: string) =>
  subscription.startsWith('message.') ? 'message' : subscription;
const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

let slack: FakeSlack;
let adapter: SlackAdapter;
/** Where the receiver listens, at the path the HTTP manifest gives Slack. */
let manifestUrlHere: (url: string | undefined) => string;
const messages: InboundMessage[] = [];
const commands: CommandInvocation[] = [];
const listened = { events: new Set<string>(), commands: [] as unknown[], interactive: [] as string[] };

beforeAll(async () => {
  const spies = {
    event: vi.spyOn(App.prototype, 'event'),
    message: vi.spyOn(App.prototype, 'message'),
    assistant: vi.spyOn(App.prototype, 'assistant'),
    command: vi.spyOn(App.prototype, 'command'),
    interactive: INTERACTIVE_LISTENERS.map((name) => [name, vi.spyOn(App.prototype, name)] as const),
  };
  slack = await FakeSlack.start();
  adapter = new SlackAdapter({
    mode: 'http',
    botToken: 'xoxb-1-test-bot-token-secret',
    signingSecret: SIGNING_SECRET,
    port: 0,
    host: '127.0.0.1',
    slackApiUrl: slack.apiUrl,
  });
  await adapter.start({
    onMessage: async (message) => {
      messages.push(message);
      return undefined;
    },
    onCommand: async (command) => {
      commands.push(command);
      return `${command.name} answered`;
    },
  });
  try {
    for (const [name] of spies.event.mock.calls) {
      if (typeof name !== 'string') throw new Error(`an event listener for a pattern (${String(name)})`);
      listened.events.add(name);
    }
    if (spies.message.mock.calls.length > 0) listened.events.add('message');
    if (spies.assistant.mock.calls.length > 0) for (const e of ASSISTANT_EVENTS) listened.events.add(e);
    listened.commands.push(...spies.command.mock.calls.map(([name]) => name));
    for (const [name, spy] of spies.interactive)
      if (spy.mock.calls.length > 0) listened.interactive.push(name);
  } finally {
    vi.restoreAllMocks();
  }
  const local = adapter.eventsUrl ?? '';
  manifestUrlHere = (url) => new URL(new URL(url ?? 'https://missing.invalid/').pathname, local).href;
});

afterAll(async () => {
  await adapter?.stop();
  await slack?.close();
});

describe('the Slack app manifests', () => {
  it('describe the same app but for how Slack reaches Ebb', () => {
    const withoutTransport = (m: SlackManifest) => {
      const { socket_mode_enabled: _mode, event_subscriptions, ...settings } = m.settings;
      const { request_url: _url, ...subscriptions } = event_subscriptions;
      return {
        ...m,
        features: {
          ...m.features,
          slash_commands: m.features.slash_commands?.map(({ url: _commandUrl, ...command }) => command),
        },
        settings: { ...settings, event_subscriptions: subscriptions },
      };
    };
    expect(withoutTransport(HTTP)).toEqual(withoutTransport(SOCKET));

    expect(SOCKET.settings.socket_mode_enabled).toBe(true);
    expect(SOCKET.settings.event_subscriptions.request_url).toBeUndefined();
    for (const command of SOCKET.features.slash_commands ?? []) expect(command.url).toBeUndefined();

    expect(HTTP.settings.socket_mode_enabled).toBe(false);
    const requestUrl = HTTP.settings.event_subscriptions.request_url;
    expect(requestUrl).toMatch(/^https:\/\//);
    // Events and slash commands share the receiver's one path.
    for (const command of HTTP.features.slash_commands ?? []) expect(command.url).toBe(requestUrl);
  });

  it.each([
    ['socket', SOCKET],
    ['http', HTTP],
  ])('(%s) give Slack what the adapter takes for granted', (_mode, manifest) => {
    expect(manifest.features.bot_user?.display_name).toBeTruthy();
    // The bot token is read once from SLACK_BOT_TOKEN and never refreshed.
    expect(manifest.settings.token_rotation_enabled).toBe(false);
    // Without a writable Messages tab nobody can DM the bot, though it listens to message.im.
    if (manifest.settings.event_subscriptions.bot_events.includes('message.im')) {
      expect(manifest.features.app_home).toMatchObject({
        messages_tab_enabled: true,
        messages_tab_read_only_enabled: false,
      });
    }
    // Slack sends assistant_thread_* only to an app with the AI-app surface turned on.
    const assistant = manifest.settings.event_subscriptions.bot_events.includes('assistant_thread_started');
    expect(manifest.features.assistant_view !== undefined).toBe(assistant);
    expect(manifest.settings.interactivity?.is_enabled === true).toBe(listened.interactive.length > 0);
  });

  it('subscribe to every event the adapter listens to, and to no other', () => {
    const subscribed = SOCKET.settings.event_subscriptions.bot_events;
    expect(listened.events.size).toBeGreaterThan(0);
    expect(sorted(subscribed.map(deliveredAs))).toEqual(sorted(listened.events));
    for (const event of subscribed) expect(Object.keys(EVENT_SCOPES)).toContain(event);
    expect(sorted(subscribed)).toEqual(expect.arrayContaining(README_EVENTS));
  });

  it('offer each of Ebb’s commands, and Slack’s request for each reaches onCommand', async () => {
    expect(listened.commands.length).toBeGreaterThan(0);
    const offered = HTTP.features.slash_commands ?? [];
    expect(sorted(offered.map((c) => c.command))).toEqual(sorted(Object.values(SLASH_COMMANDS)));

    for (const { command, url } of offered) {
      const payload = slack.build.slashCommand({ command, text: 'the deploy plan' });
      const response = await slack.sendCommand(manifestUrlHere(url), payload, {
        signingSecret: SIGNING_SECRET,
      });
      expect(response.status).toBe(200);
    }
    const named = Object.fromEntries(Object.entries(SLASH_COMMANDS).map(([name, slash]) => [slash, name]));
    expect(commands.map((c) => c.name)).toEqual(offered.map((c) => named[c.command]));
  });

  it('point Slack at the path the receiver serves', async () => {
    const requestUrl = HTTP.settings.event_subscriptions.request_url;
    expect(new URL(requestUrl ?? '').pathname).toBe(new URL(adapter.eventsUrl ?? '').pathname);
    const verified = await slack.sendUrlVerification(manifestUrlHere(requestUrl), 'challenge-123', {
      signingSecret: SIGNING_SECRET,
    });
    expect(verified.status).toBe(200);
    expect(verified.json).toEqual({ challenge: 'challenge-123' });
  });

  it('ask for exactly the scopes of the calls the adapter makes, its events and its commands', async () => {
    const eventsUrl = manifestUrlHere(HTTP.settings.event_subscriptions.request_url);
    const deliver = async (event: Parameters<FakeSlack['sendEvent']>[1]) => {
      const response = await slack.sendEvent(eventsUrl, event, { signingSecret: SIGNING_SECRET });
      expect(response.status).toBe(200);
    };
    const delivered = messages.length;

    // A message in a channel (users.info for its author), then a mention alone (conversations.info:
    // app_mention says nothing of the conversation's type); typing on it, then the reply.
    await deliver(slack.build.channelMessage({ text: `hi ${slack.build.mention()}` }));
    await deliver(slack.build.appMention({ text: `${slack.build.mention()} are you there?` }));
    await vi.waitFor(() => expect(messages).toHaveLength(delivered + 2));
    const channelKey = messages[delivered]?.channelKey ?? '';
    await adapter.typing(channelKey);
    await adapter.send(channelKey, 'Here.');

    // An assistant thread: suggested prompts when it opens, the status line while the model works.
    const threadTs = '1700000000.000900';
    await deliver(slack.build.assistantThreadStarted({ threadTs }));
    await vi.waitFor(() => expect(slack.suggestedPrompts).toHaveLength(1));
    await deliver(slack.build.directMessage({ text: 'what is ebb?', threadTs }));
    await vi.waitFor(() => expect(messages).toHaveLength(delivered + 3));
    await adapter.typing(`slack:${FAKE_SLACK.teamId}:${FAKE_SLACK.channels.aliceDm}:${threadTs}`);

    const called = sorted(slack.calls.map((c) => c.method));
    for (const method of called) expect(Object.keys(METHOD_SCOPES)).toContain(method);
    // Every method in the table was called: a scope for a call the adapter no longer makes goes too.
    expect(called).toEqual(sorted(Object.keys(METHOD_SCOPES)));

    const needed = sorted([
      ...called.flatMap((method) => METHOD_SCOPES[method] ?? []),
      ...SOCKET.settings.event_subscriptions.bot_events.map((event) => EVENT_SCOPES[event] ?? `(${event})`),
      ...((SOCKET.features.slash_commands ?? []).length > 0 ? ['commands'] : []),
    ]);
    expect(sorted(SOCKET.oauth_config.scopes.bot)).toEqual(needed);
    expect(needed).toEqual(expect.arrayContaining(README_SCOPES));
  });
});
