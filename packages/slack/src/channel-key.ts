/**
 * Slack channel keys: `slack:<team>:<channel>` for a channel or DM, `slack:<team>:<channel>:<thread_ts>`
 * for a thread (each thread is its own conversation with its own context).
 */

export interface SlackConversation {
  readonly teamId: string;
  readonly channelId: string;
  /** The `ts` of the thread's parent message. */
  readonly threadTs?: string;
}

const ID = /^[A-Z0-9]+$/;
const TS = /^\d+\.\d+$/;

export function slackChannelKey(conversation: SlackConversation): string {
  const base = `slack:${conversation.teamId}:${conversation.channelId}`;
  return conversation.threadTs === undefined ? base : `${base}:${conversation.threadTs}`;
}

/** The conversation a key names, or undefined when it is not a well-formed Slack key. */
export function parseSlackChannelKey(key: string): SlackConversation | undefined {
  const [platform, teamId, channelId, threadTs, ...rest] = key.split(':');
  if (platform !== 'slack' || rest.length > 0) return undefined;
  if (!teamId || !ID.test(teamId) || !channelId || !ID.test(channelId)) return undefined;
  if (threadTs === undefined) return { teamId, channelId };
  return TS.test(threadTs) ? { teamId, channelId, threadTs } : undefined;
}
