/**
 * `ebb memories forget` forgets for real: a distinctive fact said by mallory goes through real
 * compaction passes (the worker's processor against Postgres, the fake OpenAI server playing a model
 * that repeats everything it reads), and after forgetting it is nowhere in Postgres: not in memories,
 * not in any column of compaction_runs, not in any context span (active or retired), and with
 * `--archive` not in the messages either. The fake model stays as careless as a real one could be:
 * what it is shown, it repeats, so the fact is gone only if it was never shown again. The world it
 * runs in (the schema, the model, `plant`, `whereIsTheFact`) is test/forget-fixture.ts.
 */
import { REDACTED_MESSAGE } from '@ebb/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { FACT, type ForgetFixture, startForgetFixture } from '../../test/forget-fixture.js';
import { main } from '../cli/cli.js';
import { memoriesForget } from './memories.js';

let world: ForgetFixture;

beforeAll(async () => {
  world = await startForgetFixture();
});
afterAll(async () => {
  await world?.close();
});

describe('ebb memories forget --speaker', () => {
  it('without --yes shows what it would do and changes nothing; with --yes the fact is gone from everything but the archive', async () => {
    const key = 'web:inj1';
    await world.plant(key);
    const before = await world.whereIsTheFact(key);
    // The fact is everywhere a pass puts it: the memory, both checkpoints, the active and the retired span.
    expect(before).toEqual({ memories: 1, compactionRuns: 2, activeSpans: 1, retiredSpans: 1, messages: 2 });
    const generation = await world.channels.generation(key);

    const dry = captureIo();
    expect(await memoriesForget({ speaker: 'mallory', channel: key }, dry, world.deps())).toBe(2);
    expect(dry.stdout()).toContain(`would forget 1 memory from ${key} about mallory:`);
    expect(dry.stdout()).toContain(
      `${key}: would redact: 2 messages to redact; 1 summary span to summarize again (1..20)`,
    );
    expect(dry.stdout()).toContain('Nothing was changed.');
    expect(await world.whereIsTheFact(key)).toEqual(before);

    const requestsBefore = world.fake.requests.length;
    const recordedBefore = await world.summaryCallsRecorded(key);
    const io = captureIo();
    expect(await memoriesForget({ speaker: 'mallory', yes: true }, io, world.deps())).toBe(0);
    expect(io.stdout()).toContain('forgot 1 memory about mallory:');
    expect(io.stdout()).toContain(
      `${key}: 2 messages redacted; 1 summary span summarized again (1..20); 2 checkpoint(s) cleared`,
    );
    expect(io.stdout()).toContain('The archived messages are kept');

    // The summary was written again by the model, from the archive with mallory's messages redacted.
    const resummarize = world.fake.requests.slice(requestsBefore);
    expect(resummarize.length).toBeGreaterThan(0);
    expect(JSON.stringify(resummarize.map((r) => r.body))).not.toContain(FACT);
    // Nor any line of mallory's: the summarizer is shown what is left, no tombstone.
    expect(JSON.stringify(resummarize.map((r) => r.body))).not.toMatch(/\] mallory:/);
    expect(JSON.stringify(resummarize.map((r) => r.body))).toMatch(/\] ana:/);
    // Its calls are the channel's cost, as a pass's are, recorded before the command returned.
    expect(await world.summaryCallsRecorded(key)).toBe(recordedBefore + resummarize.length);

    // Only the archive and the raw message still hold it (no --archive).
    expect(await world.whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 2,
    });
    // The memories that summary call proposed were not stored: ana's memory stays as it was.
    expect((await world.memories.list({ channelKey: key })).map((m) => m.text)).toEqual([
      'Ana runs the deploys',
    ]);
    const view = await world.expectConsistentTokens(key);
    expect(view.generation).toBe(generation + 1);
    expect(view.spans).toHaveLength(1);
    // A pass over the prefix later folds the clean summary, and learns nothing of the fact from it.
    const result = await world.processor({
      jobId: `${key}-1-24`,
      channelKey: key,
      tier: 'background',
      fromSeq: 1,
      toSeq: 24,
      generation: view.generation,
      attempt: 1,
    });
    expect(result).toMatchObject({ kind: 'completed' });
    expect(await world.whereIsTheFact(key)).toMatchObject({ memories: 0, activeSpans: 0, retiredSpans: 0 });
  });

  it('with --archive also overwrites the archived messages, the raw one in the context included', async () => {
    const key = 'web:inj2';
    await world.plant(key);
    const io = captureIo();
    expect(
      await memoriesForget({ speaker: 'mallory', channel: key, archive: true, yes: true }, io, world.deps()),
    ).toBe(0);
    expect(io.stdout()).toContain('2 messages overwritten in the archive');
    await world.expectNowhere(key);

    const archived = await world.channels.readArchive(key, 1, 30);
    expect(archived.filter((m) => m.author === 'mallory').map((m) => [m.seq, m.text])).toEqual([
      [4, REDACTED_MESSAGE],
      [27, REDACTED_MESSAGE],
    ]);
    const view = await world.expectConsistentTokens(key);
    expect(view.raw.find((m) => m.seq === 27)?.text).toBe(REDACTED_MESSAGE);
  });

  it('with --speaker --archive also overwrites the search_history results that quoted her', async () => {
    const key = 'web:inj2r';
    await world.plant(key, { recall: true });
    const io = captureIo();
    expect(
      await memoriesForget({ speaker: 'mallory', channel: key, archive: true, yes: true }, io, world.deps()),
    ).toBe(0);
    expect(io.stdout()).toContain('4 messages overwritten in the archive');
    await world.expectNowhere(key);
    await world.expectCopyRedacted(key);
    await world.expectConsistentTokens(key);
  });

  it('refuses --archive without --speaker or --match, as `ebb memories forget` and as `ebb forget`', async () => {
    const io = captureIo();
    expect(await memoriesForget({ channel: 'web:inj1', archive: true, yes: true }, io, world.deps())).toBe(2);
    expect(io.stderr()).toContain('--archive redacts the selected messages');
    for (const argv of [
      ['forget', '--channel', 'web:inj1', '--archive', '--yes'],
      ['memories', 'forget', '--channel', 'web:inj1', '--archive', '--yes'],
    ]) {
      const cli = captureIo();
      expect(await main(argv, cli)).toBe(2);
      expect(cli.stderr()).toBe(
        'ebb memories forget: --archive redacts the selected messages: use it with --speaker NAME or --match TEXT',
      );
    }
  });
});

describe("ebb forget --speaker, the bot's replies", () => {
  it("--speaker NAME --archive --yes alone leaves nothing of what she said, the bot's reply to her included", async () => {
    const key = 'web:inj6';
    await world.plant(key, { echo: true });
    // mallory at seq 4 and 27; the bot's reply to seq 4 (seq 5) repeats the fact.
    expect(await world.whereIsTheFact(key)).toMatchObject({ memories: 1, activeSpans: 1, messages: 3 });
    const dry = captureIo();
    expect(await memoriesForget({ speaker: 'mallory', channel: key, archive: true }, dry, world.deps())).toBe(
      2,
    );
    expect(dry.stdout()).toContain(`${key}: would redact: 3 messages to redact;`);

    const io = captureIo();
    expect(
      await memoriesForget({ speaker: 'mallory', channel: key, archive: true, yes: true }, io, world.deps()),
    ).toBe(0);
    await world.expectNowhere(key);
    // The reply keeps its seq and author; the people's messages after it are not hers and stay.
    const archived = await world.channels.readArchive(key, 4, 6);
    expect(archived.map((m) => [m.author, m.text === REDACTED_MESSAGE])).toEqual([
      ['mallory', true],
      ['ebb', true],
      ['bo', false],
    ]);
    await world.expectConsistentTokens(key);
  });
});

describe('ebb forget --match', () => {
  it('finds the fact wherever it was said, whoever wrote it', async () => {
    const key = 'web:inj6m';
    await world.plant(key, { echo: true });
    const all = captureIo();
    expect(await memoriesForget({ match: FACT.toLowerCase(), channel: key }, all, world.deps())).toBe(2);
    expect(all.stdout()).toContain(`would forget 1 memory from ${key} holding "${FACT.toLowerCase()}":`);
    expect(all.stdout()).toContain(`${key}: would redact: 3 messages to redact;`);
    const io = captureIo();
    expect(
      await memoriesForget(
        { match: FACT.toLowerCase(), channel: key, archive: true, yes: true },
        io,
        world.deps(),
      ),
    ).toBe(0);
    await world.expectNowhere(key);
    const archived = await world.channels.readArchive(key, 5, 5);
    expect(archived.map((m) => [m.author, m.text])).toEqual([['ebb', REDACTED_MESSAGE]]);
    await world.expectConsistentTokens(key);
  });

  it('refuses a --match too short to be specific', async () => {
    const io = captureIo();
    expect(await main(['forget', '--match', 'a b', '--yes'], io)).toBe(2);
    expect(io.stderr()).toContain('--match needs at least 4 characters');
  });
});

describe('ebb memories forget --id and --channel', () => {
  it('--id redacts the memory’s source messages from the summaries and checkpoints, and keeps the rest', async () => {
    const key = 'web:inj3';
    await world.plant(key);
    const [vault] = (await world.memories.list({ channelKey: key })).filter((m) => m.text.includes(FACT));
    expect(vault).toMatchObject({ fromSeq: 4, toSeq: 4, speaker: 'mallory' });
    const io = captureIo();
    expect(await memoriesForget({ ids: [vault?.id ?? ''], yes: true }, io, world.deps())).toBe(0);
    expect(io.stdout()).toContain(`${key}: 1 message redacted; 1 summary span summarized again (1..20)`);
    expect(await world.whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 2,
    });
    expect((await world.memories.list({ channelKey: key })).map((m) => m.text)).toEqual([
      'Ana runs the deploys',
    ]);
    // Only the source message (seq 4) was redacted: the rest of the range is still summarized.
    const [span] = (await world.expectConsistentTokens(key)).spans;
    expect(span?.kind === 'summary' ? span.text : '').toContain('message 5 about the release plan');
  });

  it('--id redacts only what each memory came from: a memory whose seqs name no message of its pass is never stored', async () => {
    const key = 'web:inj8';
    // Both passes' model names the vault code's source right, and gets another memory's seqs wrong.
    const misattributing = () => ({
      json: {
        summary: 'Summary: the release plan; mallory gave a vault code.',
        memories: [
          {
            type: 'fact',
            text: `The vault code is ${FACT}`,
            importance: 0.9,
            speaker: 'mallory',
            fromSeq: 4,
            toSeq: 4,
          },
          {
            type: 'decision',
            text: 'The release ships on Friday',
            importance: 0.7,
            speaker: null,
            fromSeq: 900,
            toSeq: 905,
          },
        ],
      },
    });
    world.fake.enqueue(misattributing, misattributing);
    await world.plant(key);
    const stored = await world.memories.list({ channelKey: key });
    const io = captureIo();
    expect(await memoriesForget({ ids: stored.map((m) => m.id), yes: true }, io, world.deps())).toBe(0);
    // The vault code's own message, not the pass it was said in.
    expect(io.stdout()).toContain(`${key}: 1 message redacted; 1 summary span summarized again (1..20)`);
    expect(stored.map((m) => [m.text, m.fromSeq, m.toSeq])).toEqual([[`The vault code is ${FACT}`, 4, 4]]);
  });

  it('--channel forgets every memory of the channel and redacts all their sources', async () => {
    const key = 'web:inj4';
    const bystander = 'web:inj5';
    await world.plant(key);
    await world.plant(bystander);
    const io = captureIo();
    expect(await memoriesForget({ channel: key, yes: true }, io, world.deps())).toBe(0);
    expect(io.stdout()).toContain(`forgot 2 memories from ${key}:`);
    expect(await world.whereIsTheFact(key)).toEqual({
      memories: 0,
      compactionRuns: 0,
      activeSpans: 0,
      retiredSpans: 0,
      messages: 2,
    });
    expect(await world.memories.list({ channelKey: key })).toEqual([]);
    // Another channel where the same was said is not touched.
    expect(await world.whereIsTheFact(bystander)).toEqual({
      memories: 1,
      compactionRuns: 2,
      activeSpans: 1,
      retiredSpans: 1,
      messages: 2,
    });
    expect((await world.runs.recent(key, 10)).every((r) => r.status === 'completed')).toBe(true);
  });
});

describe('ebb forget cut off part-way', () => {
  it('leaves what selects the messages in place, so running it again finishes the job', async () => {
    const key = 'web:inj7';
    await world.plant(key, { echo: true });
    // The re-summarizing call hangs long enough for Postgres to go away under it.
    world.fake.fail({ kind: 'slow', delayMs: 1_500 }, { times: 1 });
    const asked = world.fake.completionRequests.length;
    const first = captureIo();
    const cut = memoriesForget({ match: FACT, channel: key, archive: true, yes: true }, first, world.deps());
    await vi.waitFor(() => expect(world.fake.completionRequests.length).toBe(asked + 1), { timeout: 10_000 });
    world.proxy.cut();
    expect(await cut).toBe(1);
    world.proxy.restore();
    // Nothing was forgotten yet, and the archive still finds every message holding the fact.
    expect(await world.whereIsTheFact(key)).toMatchObject({ memories: 1, messages: 3 });

    const again = captureIo();
    expect(
      await memoriesForget({ match: FACT, channel: key, archive: true, yes: true }, again, world.deps()),
    ).toBe(0);
    await world.expectNowhere(key);
  });
});
