import { describe, expect, it } from 'vitest';
import type { MessageChange } from '../model/platform.js';
import { locateChange } from './locate-change.js';

const CHANNEL = 'slack:T1:C1';
const THREAD = `${CHANNEL}:1700000000.000100`;
const OTHER = `${CHANNEL}:1700000000.000200`;
const at = { platform: 'slack', ts: '2026-11-22T10:00:00.000Z' } as const;
const deletion = (ids: readonly string[], threadUnknown = true): MessageChange => ({
  kind: 'deleted',
  ...at,
  channelKey: CHANNEL,
  platformMessageIds: ids,
  ...(threadUnknown ? { threadUnknown } : {}),
});
const edit: MessageChange = {
  kind: 'edited',
  ...at,
  channelKey: CHANNEL,
  platformMessageId: 'r1',
  text: 'new',
  threadUnknown: true,
};
const nowhere = { inChannel: [], inThreads: [] } as const;

describe('locateChange', () => {
  it('keeps a change that names its thread as it is, whatever was found', () => {
    const named = { ...deletion(['r1'], false), channelKey: THREAD };
    expect(
      locateChange(named, { inChannel: [], inThreads: [{ channelKey: OTHER, platformMessageId: 'r1' }] }),
    ).toEqual([named]);
  });

  it('moves a deletion or an edit to the thread that holds its message, the thread then known', () => {
    const found = { inChannel: [], inThreads: [{ channelKey: THREAD, platformMessageId: 'r1' }] };
    expect(locateChange(deletion(['r1']), found)).toEqual([
      { ...deletion(['r1'], false), channelKey: THREAD },
    ]);
    const { threadUnknown: _, ...named } = edit;
    expect(locateChange(edit, found)).toEqual([{ ...named, channelKey: THREAD }]);
  });

  it('leaves it in the channel when the channel holds it, or nothing under the channel does', () => {
    expect(locateChange(deletion(['m1']), { inChannel: ['m1'], inThreads: [] })).toEqual([
      deletion(['m1'], false),
    ]);
    expect(locateChange(deletion(['gone']), nowhere)).toEqual([deletion(['gone'], false)]);
    const { threadUnknown: _, ...named } = edit;
    expect(locateChange(edit, nowhere)).toEqual([named]);
  });

  it("splits a bulk deletion by conversation: the channel's ids first, then each thread's", () => {
    const found = {
      inChannel: ['m1'],
      inThreads: [
        { channelKey: THREAD, platformMessageId: 'r1' },
        { channelKey: THREAD, platformMessageId: 'r2' },
        { channelKey: OTHER, platformMessageId: 'r3' },
        // Not asked for, or the channel's own: left where they are.
        { channelKey: OTHER, platformMessageId: 'unasked' },
        { channelKey: OTHER, platformMessageId: 'm1' },
      ],
    };
    const located = locateChange(deletion(['r2', 'm1', 'r1', 'r3', 'gone']), found);
    expect(located.map((c) => [c.channelKey, c.kind === 'deleted' && c.platformMessageIds])).toEqual([
      [CHANNEL, ['m1']],
      [THREAD, ['r1', 'r2']],
      [OTHER, ['r3']],
    ]);
    expect(located.filter((c) => c.threadUnknown !== undefined)).toEqual([]);
  });
});
