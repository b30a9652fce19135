/**
 * The file spool's records as pure functions, on bytes in memory: what a file's lines leave pending,
 * and what a scrub finds in the spool file and the dead letters. The same on real files, with the
 * crashes and restarts around them, is `file-inbound-spool.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { spooledMessage } from '../../test/spooled-message.js';
import {
  encodeLine,
  entriesOf,
  type Pending,
  pendingText,
  readPending,
  scanDeadLetters,
  scanSpoolFile,
  wholeLines,
} from './spool-records.js';

const push = (id: string, channelKey: string, i: number) =>
  encodeLine({ id, message: spooledMessage(channelKey, i) });
const bytes = (text: string) => Buffer.from(text, 'utf8');
const pendingIds = (pending: Pending) =>
  Object.fromEntries([...pending].map(([key, entries]) => [key, [...entries.keys()]]));

describe('wholeLines', () => {
  it('drops an unfinished last line and says where the whole lines end', () => {
    const text = `${push('f1', 'web:a', 1)}\n{"id":"f2","mess`;
    const { lines, end, unfinished } = wholeLines(bytes(text));
    expect(lines).toEqual([push('f1', 'web:a', 1).trimEnd()]);
    expect(end).toBe(Buffer.byteLength(push('f1', 'web:a', 1)) + 1);
    expect(unfinished).toBe(true);
    expect(wholeLines(bytes(push('f1', 'web:a', 1))).unfinished).toBe(false);
  });
});

describe('readPending', () => {
  it('leaves each push less the removals after it, per channel in arrival order', () => {
    const text = [
      push('f1', 'web:a', 1),
      push('f2', 'web:b', 2),
      push('f3', 'web:a', 3),
      encodeLine({ removed: ['f1', 'f2', 'f9'] }),
      push('f4', 'web:a', 4),
    ].join('');
    const { pending, lastId } = readPending(wholeLines(bytes(text)).lines);
    expect(pendingIds(pending)).toEqual({ 'web:a': ['f3', 'f4'] });
    expect(lastId).toBe(4);
  });

  it('continues from the highest id, clock-reading ids included, and skips lines that hold no record', () => {
    const text = [
      push('f1732000000001', 'web:a', 1),
      push('f7', 'web:a', 2),
      'not json\n',
      '{"other":1}\n',
    ].join('');
    const { pending, lastId } = readPending(wholeLines(bytes(text)).lines);
    expect(pendingIds(pending)).toEqual({ 'web:a': ['f1732000000001', 'f7'] });
    expect(lastId).toBe(1732000000001);
  });

  it('reads back a record glued to a torn fragment', () => {
    const { pending } = readPending([`{"id":"f1","message":{"chann${push('f2', 'web:a', 2).trimEnd()}`]);
    expect(pendingIds(pending)).toEqual({ 'web:a': ['f2'] });
  });
});

describe('pendingText', () => {
  it('writes exactly the pending entries, with their ids, read back as they were', () => {
    const pending: Pending = new Map();
    entriesOf(pending, 'web:a').set('f3', spooledMessage('web:a', 3));
    entriesOf(pending, 'web:b').set('f5', spooledMessage('web:b', 5));
    entriesOf(pending, 'web:a').set('f6', spooledMessage('web:a', 6));
    const text = pendingText(pending);
    expect(text).toBe(push('f3', 'web:a', 3) + push('f6', 'web:a', 6) + push('f5', 'web:b', 5));
    expect(readPending(wholeLines(bytes(text)).lines).pending).toEqual(pending);
  });
});

describe('scanSpoolFile', () => {
  it('finds every record, removals included, and no fragment in a clean file', () => {
    const scan = scanSpoolFile(bytes(push('f1', 'web:a', 1) + encodeLine({ removed: ['f1'] })));
    expect(scan.records).toEqual([{ id: 'f1', message: spooledMessage('web:a', 1) }, { removed: ['f1'] }]);
    expect(scan.fragments).toBe(false);
  });

  it('says a fragment is there for an unfinished last line, a line of no record, or a record glued to one', () => {
    const clean = push('f1', 'web:a', 1);
    expect(scanSpoolFile(bytes(`${clean}{"id":"f2"`)).fragments).toBe(true);
    expect(scanSpoolFile(bytes(`${clean}garbage\n`)).fragments).toBe(true);
    const glued = scanSpoolFile(bytes(`{"id":"f0","mess${push('f2', 'web:a', 2)}`));
    expect(glued.records).toEqual([{ id: 'f2', message: spooledMessage('web:a', 2) }]);
    expect(glued.fragments).toBe(true);
  });
});

describe('scanDeadLetters', () => {
  it('keeps each line as it is, with its record when it is a dead letter', () => {
    const letter = JSON.stringify({
      deadLettered: 'x',
      reason: 'r',
      id: 'f1',
      message: spooledMessage('web:a', 1),
    });
    const scan = scanDeadLetters(bytes(`${letter}\n{"note":"kept"}\n`));
    expect(scan.lines.map((l) => l.raw)).toEqual([letter, '{"note":"kept"}']);
    expect(scan.lines.map((l) => l.record?.id)).toEqual(['f1', undefined]);
    expect(scan.fragments).toBe(false);
  });

  it('says a fragment is there for a line that is not JSON or an unfinished last line, and drops it', () => {
    expect(scanDeadLetters(bytes('{"a":1}\nnot json\n'))).toMatchObject({
      lines: [{ raw: '{"a":1}' }],
      fragments: true,
    });
    expect(scanDeadLetters(bytes('{"a":1}\n{"b"'))).toMatchObject({
      lines: [{ raw: '{"a":1}' }],
      fragments: true,
    });
  });
});
