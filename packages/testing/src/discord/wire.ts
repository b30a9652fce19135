/**
 * The slice of Discord's API v10 wire format the fake speaks: gateway opcodes, and builders for the
 * user, channel, guild, message and interaction objects discord.js reads. Field names are Discord's
 * (snake_case); only what discord.js needs to build its structures is filled in.
 */
import { snowflakeTimestamp } from './snowflake.js';

export const GatewayOp = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  PresenceUpdate: 3,
  Resume: 6,
  Reconnect: 7,
  RequestGuildMembers: 8,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const;

export const ChannelType = { GuildText: 0, DM: 1, PublicThread: 11, PrivateThread: 12 } as const;
export type ChannelType = (typeof ChannelType)[keyof typeof ChannelType];

export const InteractionType = { ApplicationCommand: 2 } as const;
export const InteractionCallbackType = {
  ChannelMessageWithSource: 4,
  DeferredChannelMessageWithSource: 5,
} as const;
export const ApplicationCommandOptionType = { String: 3, Integer: 4, Boolean: 5 } as const;
export const MessageFlags = { Ephemeral: 64 } as const;

/** Every permission bit; the fake's bot may do anything. */
export const ALL_PERMISSIONS = ((1n << 53n) - 1n).toString();

export interface GatewayPayload {
  readonly op: number;
  readonly d: unknown;
  readonly s?: number | null;
  readonly t?: string | null;
}

export interface WireUser {
  readonly id: string;
  readonly username: string;
  readonly global_name: string | null;
  readonly discriminator: string;
  readonly avatar: string | null;
  readonly bot?: boolean;
}

export interface WireChannel {
  readonly id: string;
  readonly type: ChannelType;
  readonly guild_id?: string;
  readonly name?: string;
  readonly position?: number;
  readonly parent_id?: string | null;
  readonly permission_overwrites?: readonly unknown[];
  readonly recipients?: readonly WireUser[];
  readonly owner_id?: string;
  readonly thread_metadata?: {
    readonly archived: boolean;
    readonly auto_archive_duration: number;
    readonly archive_timestamp: string;
    readonly locked: boolean;
    /** Private threads only: whether members other than moderators may invite others. */
    readonly invitable?: boolean;
  };
  readonly last_message_id?: string | null;
}

export interface WireMember {
  readonly user?: WireUser;
  readonly nick: string | null;
  readonly roles: readonly string[];
  readonly joined_at: string;
  readonly deaf: boolean;
  readonly mute: boolean;
  readonly flags: number;
  readonly permissions?: string;
}

export interface WireMessage {
  readonly id: string;
  readonly channel_id: string;
  readonly guild_id?: string;
  readonly channel_type?: ChannelType;
  readonly author: WireUser;
  readonly member?: WireMember;
  readonly content: string;
  readonly timestamp: string;
  /** ISO 8601 once the author edited it; an unfurl or a pin leaves it as it was. */
  readonly edited_timestamp: string | null;
  readonly tts: boolean;
  readonly mention_everyone: boolean;
  readonly mentions: readonly WireUser[];
  readonly mention_roles: readonly string[];
  readonly attachments: readonly unknown[];
  readonly embeds: readonly unknown[];
  readonly pinned: boolean;
  readonly type: number;
  readonly flags: number;
  readonly components: readonly unknown[];
  readonly webhook_id?: string;
}

export function userPayload(input: {
  id: string;
  username: string;
  globalName?: string | null;
  bot?: boolean;
}): WireUser {
  return {
    id: input.id,
    username: input.username,
    global_name: input.globalName ?? null,
    discriminator: '0',
    avatar: null,
    ...(input.bot ? { bot: true } : {}),
  };
}

export function textChannelPayload(input: {
  id: string;
  guildId: string;
  name: string;
  position?: number;
}): WireChannel {
  return {
    id: input.id,
    type: ChannelType.GuildText,
    guild_id: input.guildId,
    name: input.name,
    position: input.position ?? 0,
    parent_id: null,
    permission_overwrites: [],
    last_message_id: null,
  };
}

export function threadPayload(input: {
  id: string;
  guildId: string;
  parentId: string;
  name: string;
  ownerId: string;
  /** A public thread (11) by default. */
  type?: typeof ChannelType.PublicThread | typeof ChannelType.PrivateThread;
  archived?: boolean;
}): WireChannel {
  const type = input.type ?? ChannelType.PublicThread;
  return {
    id: input.id,
    type,
    guild_id: input.guildId,
    name: input.name,
    parent_id: input.parentId,
    owner_id: input.ownerId,
    thread_metadata: {
      archived: input.archived ?? false,
      auto_archive_duration: 1440,
      archive_timestamp: new Date(snowflakeTimestamp(input.id)).toISOString(),
      locked: false,
      ...(type === ChannelType.PrivateThread ? { invitable: true } : {}),
    },
    last_message_id: null,
  };
}

/** The thread archived (or unarchived), `archive_timestamp` now, as Discord's THREAD_UPDATE carries it. */
export function archivedThreadPayload(thread: WireChannel, archived: boolean): WireChannel {
  const metadata = thread.thread_metadata;
  if (!metadata) throw new Error(`FakeDiscord: channel ${thread.id} is not a thread`);
  return {
    ...thread,
    thread_metadata: { ...metadata, archived, archive_timestamp: new Date().toISOString() },
  };
}

export function dmChannelPayload(input: { id: string; recipient: WireUser }): WireChannel {
  return { id: input.id, type: ChannelType.DM, recipients: [input.recipient], last_message_id: null };
}

export function memberPayload(input: {
  user?: WireUser;
  nick?: string | null;
  joinedAt?: string;
  permissions?: string;
}): WireMember {
  return {
    ...(input.user ? { user: input.user } : {}),
    nick: input.nick ?? null,
    roles: [],
    joined_at: input.joinedAt ?? new Date(0).toISOString(),
    deaf: false,
    mute: false,
    flags: 0,
    ...(input.permissions === undefined ? {} : { permissions: input.permissions }),
  };
}

/** The `GUILD_CREATE` body: the guild with its channels and active threads. */
export function guildCreatePayload(input: {
  id: string;
  name: string;
  ownerId: string;
  channels: readonly WireChannel[];
  threads: readonly WireChannel[];
  members?: readonly WireMember[];
}): Record<string, unknown> {
  const withoutGuildId = ({ guild_id: _ignored, ...channel }: WireChannel) => channel;
  return {
    id: input.id,
    name: input.name,
    icon: null,
    owner_id: input.ownerId,
    unavailable: false,
    large: false,
    member_count: input.members?.length ?? 1,
    joined_at: new Date(snowflakeTimestamp(input.id)).toISOString(),
    features: [],
    roles: [
      {
        id: input.id,
        name: '@everyone',
        color: 0,
        hoist: false,
        position: 0,
        permissions: ALL_PERMISSIONS,
        managed: false,
        mentionable: false,
        flags: 0,
      },
    ],
    emojis: [],
    stickers: [],
    channels: input.channels.map(withoutGuildId),
    threads: input.threads,
    members: input.members ?? [],
    presences: [],
    voice_states: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
    preferred_locale: 'en-US',
    premium_tier: 0,
    system_channel_flags: 0,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    mfa_level: 0,
    nsfw_level: 0,
  };
}

const MENTION = /<@!?(\d{17,20})>/g;

/** The ids mentioned as `<@id>` or `<@!id>` in `content`, in order, without repeats. */
export function mentionedIds(content: string): string[] {
  return [...new Set([...content.matchAll(MENTION)].map((m) => m[1] ?? ''))];
}

export function messagePayload(input: {
  id: string;
  channel: WireChannel;
  author: WireUser;
  content: string;
  /** The author's guild member (guild channels only); discord.js reads the nickname from it. */
  member?: WireMember;
  mentions?: readonly WireUser[];
  webhookId?: string;
}): WireMessage {
  const guildId = input.channel.guild_id;
  return {
    id: input.id,
    channel_id: input.channel.id,
    ...(guildId === undefined ? {} : { guild_id: guildId }),
    channel_type: input.channel.type,
    author: input.author,
    ...(input.member && guildId !== undefined ? { member: input.member } : {}),
    content: input.content,
    timestamp: new Date(snowflakeTimestamp(input.id)).toISOString(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: input.mentions ?? [],
    mention_roles: [],
    attachments: [],
    embeds: [],
    pinned: false,
    type: 0,
    flags: 0,
    components: [],
    ...(input.webhookId === undefined ? {} : { webhook_id: input.webhookId }),
  };
}

export interface WireCommandOption {
  readonly name: string;
  readonly type: number;
  readonly description?: string;
  readonly required?: boolean;
}

export interface WireCommand {
  readonly id: string;
  readonly application_id: string;
  readonly guild_id?: string;
  readonly name: string;
  readonly description: string;
  readonly type: number;
  readonly options?: readonly WireCommandOption[];
  readonly version: string;
  readonly [field: string]: unknown;
}

/** An `INTERACTION_CREATE` body for a chat-input (slash) command. */
export function commandInteractionPayload(input: {
  id: string;
  token: string;
  applicationId: string;
  command: WireCommand;
  channel: WireChannel;
  user: WireUser;
  member?: WireMember;
  options?: readonly { name: string; type: number; value: string | number | boolean }[];
}): Record<string, unknown> {
  const guildId = input.channel.guild_id;
  const where =
    guildId === undefined
      ? { user: input.user, authorizing_integration_owners: { '0': input.applicationId }, context: 1 }
      : {
          guild_id: guildId,
          guild: { id: guildId, locale: 'en-US', features: [] },
          guild_locale: 'en-US',
          member: { ...(input.member ?? memberPayload({})), user: input.user, permissions: ALL_PERMISSIONS },
          authorizing_integration_owners: { '0': guildId },
          context: 0,
        };
  return {
    id: input.id,
    application_id: input.applicationId,
    type: InteractionType.ApplicationCommand,
    token: input.token,
    version: 1,
    data: {
      id: input.command.id,
      name: input.command.name,
      type: input.command.type,
      ...(input.command.guild_id === undefined ? {} : { guild_id: input.command.guild_id }),
      ...(input.options && input.options.length > 0 ? { options: input.options } : {}),
    },
    channel_id: input.channel.id,
    channel: input.channel,
    app_permissions: ALL_PERMISSIONS,
    locale: 'en-US',
    entitlements: [],
    attachment_size_limit: 10 * 1024 * 1024,
    ...where,
  };
}

/** Discord's JSON error body. */
export function apiError(code: number, message: string, errors?: unknown): Record<string, unknown> {
  return { message, code, ...(errors === undefined ? {} : { errors }) };
}
