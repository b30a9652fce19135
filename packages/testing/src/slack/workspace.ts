/**
 * The state of the fake Slack workspace: who is in it, which conversations exist, what the bot has
 * posted and which reactions it has left. The Web API handlers read and change it; tests read it.
 */

export type FakeChannelType = 'channel' | 'group' | 'im' | 'mpim';

export interface FakeSlackUser {
  readonly id: string;
  /** The handle (`alice`). */
  readonly name: string;
  readonly realName?: string;
  readonly displayName?: string;
  readonly isBot?: boolean;
}

export interface FakeSlackChannel {
  readonly id: string;
  readonly name: string;
  readonly type: FakeChannelType;
  /** For an `im`: the user on the other side. */
  readonly user?: string;
}

/** The workspace, app and bot identities of a fake (all overridable). */
export interface FakeSlackIdentity {
  readonly teamId: string;
  readonly teamName: string;
  readonly teamDomain: string;
  readonly appId: string;
  readonly botUserId: string;
  readonly botId: string;
  /** The bot user's handle, returned by `auth.test` as `user`. */
  readonly botName: string;
}

/** Ids of the default workspace, for tests to refer to. */
export const FAKE_SLACK = {
  teamId: 'T0EBBTEAM',
  teamName: 'Ebb Test',
  teamDomain: 'ebb-test',
  appId: 'A0EBBAPP1',
  botUserId: 'U0EBBBOT1',
  botId: 'B0EBBBOT1',
  botName: 'ebb',
  users: { alice: 'U0ALICE01', bob: 'U0BOB0001' },
  /** Another app's bot, for messages the bot must archive but never answer. */
  otherBot: { userId: 'U0DEPLOY1', botId: 'B0DEPLOY1', name: 'deploybot' },
  channels: {
    general: 'C0GENERAL',
    random: 'C0RANDOM1',
    secret: 'G0SECRET1',
    aliceDm: 'D0ALICE01',
    groupDm: 'G0MPIM001',
  },
} as const;

export const DEFAULT_IDENTITY = {
  teamId: FAKE_SLACK.teamId,
  teamName: FAKE_SLACK.teamName,
  teamDomain: FAKE_SLACK.teamDomain,
  appId: FAKE_SLACK.appId,
  botUserId: FAKE_SLACK.botUserId,
  botId: FAKE_SLACK.botId,
  botName: FAKE_SLACK.botName,
} as const satisfies FakeSlackIdentity;

export const DEFAULT_USERS: readonly FakeSlackUser[] = [
  { id: FAKE_SLACK.users.alice, name: 'alice', realName: 'Alice Liddell', displayName: 'Alice' },
  { id: FAKE_SLACK.users.bob, name: 'bob', realName: 'Bob Builder', displayName: '' },
  { id: FAKE_SLACK.otherBot.userId, name: FAKE_SLACK.otherBot.name, realName: 'Deploy Bot', isBot: true },
];

export const DEFAULT_CHANNELS: readonly FakeSlackChannel[] = [
  { id: FAKE_SLACK.channels.general, name: 'general', type: 'channel' },
  { id: FAKE_SLACK.channels.random, name: 'random', type: 'channel' },
  { id: FAKE_SLACK.channels.secret, name: 'secret', type: 'group' },
  { id: FAKE_SLACK.channels.aliceDm, name: FAKE_SLACK.users.alice, type: 'im', user: FAKE_SLACK.users.alice },
  // A group DM (alice, bob and the bot): `channel_type: 'mpim'`, a G id like a private channel's.
  { id: FAKE_SLACK.channels.groupDm, name: 'mpdm-alice--bob--ebb-1', type: 'mpim' },
];

/** A message the app posted with `chat.postMessage`. */
export interface PostedMessage {
  readonly channel: string;
  readonly ts: string;
  readonly text: string;
  readonly threadTs?: string;
}

/** A message the app posted with `chat.postEphemeral`. */
export interface EphemeralMessage {
  readonly channel: string;
  readonly user: string;
  readonly text: string;
  readonly messageTs: string;
}

/** What `assistant.threads.setStatus` set, in order (an empty status clears it). */
export interface AssistantStatusChange {
  readonly channel: string;
  readonly threadTs: string;
  readonly status: string;
  /** Set by a reply in the thread rather than by `setStatus`. */
  readonly byReply: boolean;
}

/** Prompts offered with `assistant.threads.setSuggestedPrompts`. */
export interface SuggestedPrompts {
  readonly channel: string;
  readonly threadTs: string;
  readonly prompts: readonly { readonly title: string; readonly message: string }[];
  readonly title?: string;
}

export class FakeWorkspace {
  readonly identity: FakeSlackIdentity;
  readonly users = new Map<string, FakeSlackUser>();
  readonly channels = new Map<string, FakeSlackChannel>();
  readonly messages: PostedMessage[] = [];
  readonly ephemerals: EphemeralMessage[] = [];
  /** `channel:ts` → reaction names currently on that message (the bot's own reactions). */
  readonly reactions = new Map<string, Set<string>>();
  readonly assistantStatuses: AssistantStatusChange[] = [];
  readonly suggestedPrompts: SuggestedPrompts[] = [];
  /** `channel:thread_ts` → the status shown now. */
  readonly #statusNow = new Map<string, string>();
  #tsSeconds = Math.floor(Date.now() / 1000);
  #tsMicros = 0;

  constructor(
    identity: FakeSlackIdentity,
    users: readonly FakeSlackUser[],
    channels: readonly FakeSlackChannel[],
  ) {
    this.identity = identity;
    const botUser = {
      id: identity.botUserId,
      name: identity.botName,
      realName: identity.botName,
      isBot: true,
    };
    for (const user of [botUser, ...users]) this.users.set(user.id, user);
    for (const channel of channels) this.channels.set(channel.id, channel);
  }

  /** A fresh, strictly increasing Slack timestamp (`seconds.micros`). */
  nextTs(): string {
    this.#tsMicros++;
    if (this.#tsMicros > 999_999) {
      this.#tsSeconds++;
      this.#tsMicros = 1;
    }
    return `${this.#tsSeconds}.${String(this.#tsMicros).padStart(6, '0')}`;
  }

  /** `channel_type` as Slack puts it on a message event. */
  channelType(channelId: string): FakeChannelType {
    return this.channels.get(channelId)?.type ?? 'channel';
  }

  /** Sets (or, with `''`, clears) a thread's status; a reply clearing no status records nothing. */
  setAssistantStatus(channel: string, threadTs: string, status: string, byReply = false): void {
    const key = `${channel}:${threadTs}`;
    if (byReply && !this.#statusNow.get(key)) return;
    if (status === '') this.#statusNow.delete(key);
    else this.#statusNow.set(key, status);
    this.assistantStatuses.push({ channel, threadTs, status, byReply });
  }

  assistantStatus(channel: string, threadTs: string): string | undefined {
    return this.#statusNow.get(`${channel}:${threadTs}`);
  }

  reactionsOn(channel: string, ts: string): readonly string[] {
    return [...(this.reactions.get(`${channel}:${ts}`) ?? [])];
  }
}
