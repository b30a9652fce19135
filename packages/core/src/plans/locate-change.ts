/**
 * Where a deletion or an edit applies when its platform did not say which thread the message is in
 * (`MessageChange.threadUnknown`: a Slack change without `thread_ts` or `previous_message`). The
 * change names the channel; a thread reply was archived under its thread's key. The bot looks the ids
 * up in the channel, then in its threads, and applies what this returns, each change in the actor
 * of its conversation, exactly as a change that named its thread.
 */
import { changeIds, type MessageChange } from '../model/platform.js';

/** A message the archive holds under a platform id, and the conversation it is archived in. */
export interface HeldMessage {
  readonly channelKey: string;
  readonly platformMessageId: string;
}

export interface ChangeWhereabouts {
  /** The change's ids its own `channelKey` (the channel) holds. */
  readonly inChannel: readonly string[];
  /** Where the channel's threads hold the others (`ArchiveReader.findInThreads`), by key. */
  readonly inThreads: readonly HeldMessage[];
}

/**
 * The changes `change` comes to, none with `threadUnknown`: a change that names its thread, as it
 * is; else one per conversation holding some of its ids, with those ids (the channel's first, then
 * each thread's in key order). When nothing under the channel holds them, the change stays the
 * channel's, where it finds nothing (`unknown`), as a change to a message never archived does.
 */
export function locateChange(change: MessageChange, found: ChangeWhereabouts): MessageChange[] {
  if (!change.threadUnknown) return [change];
  const { threadUnknown: _guessed, ...named } = change;
  const ids = changeIds(change);
  const here = ids.filter((id) => found.inChannel.includes(id));
  const byThread = new Map<string, string[]>();
  for (const { channelKey, platformMessageId: id } of found.inThreads) {
    if (!ids.includes(id) || here.includes(id)) continue;
    byThread.set(channelKey, [...(byThread.get(channelKey) ?? []), id]);
  }
  if (byThread.size === 0) return [named];
  return [
    ...(here.length > 0 ? [withIds(named, change.channelKey, here)] : []),
    ...[...byThread].map(([channelKey, threadIds]) => withIds(named, channelKey, threadIds)),
  ];
}

function withIds(change: MessageChange, channelKey: string, ids: readonly string[]): MessageChange {
  switch (change.kind) {
    case 'deleted':
      return { ...change, channelKey, platformMessageIds: ids };
    case 'edited':
      return { ...change, channelKey };
    default: {
      const exhaustive: never = change;
      throw new Error(`unknown change ${String(exhaustive)}`);
    }
  }
}
