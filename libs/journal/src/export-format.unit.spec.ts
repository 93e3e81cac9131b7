import { describe, expect, it } from 'vitest';
import { formatEventLine, formatHeader, JournalFormatError, parseEventLine, parseHeader, peekPosition, type JournalEvent } from './export-format';

const event: JournalEvent = {
  position: 7,
  streamId: 'execution-1',
  revision: 0,
  id: 'e1',
  type: 'ExecutionAccepted',
  data: { text: 'ünïcode ✓ 😀' },
  metadata: {},
  recordedAt: '2026-07-22T10:00:00.000Z',
  prev: '0'.repeat(64),
  hash: 'a'.repeat(64),
};

const formatError = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as JournalFormatError;
  }
  throw new Error('expected a JournalFormatError');
};

describe('journal export format', () => {
  it('given an event, then its line has the RecordedEvent fields, position first, and parses back', () => {
    const line = formatEventLine(event);
    expect(line.startsWith('{"position":7,')).toBe(true);
    expect(parseEventLine(line, 2)).toEqual(event);
    expect(peekPosition(line)).toBe(7);
  });

  it('given a header, then it round-trips', () => {
    const line = formatHeader({ exportedAt: 'now', fromPosition: 0, toPosition: 9, publicKeyId: null });
    expect(parseHeader(line)).toEqual({ format: 'oncegate-journal/1', exportedAt: 'now', fromPosition: 0, toPosition: 9, publicKeyId: null });
  });

  it('given malformed lines, then the error names the line and the fault', () => {
    expect(formatError(() => parseEventLine('{"position":', 5))).toMatchObject({ line: 5, detail: expect.stringContaining('not JSON') });
    expect(formatError(() => parseEventLine('[1]', 3))).toMatchObject({ line: 3, detail: 'event line is not a JSON object' });
    const { hash: _hash, ...noHash } = event;
    expect(formatError(() => parseEventLine(JSON.stringify(noHash), 4))).toMatchObject({ line: 4, detail: 'missing field(s) hash' });
    expect(formatError(() => parseEventLine(JSON.stringify({ ...event, revision: -1 }), 6)).detail).toContain('revision');
    expect(formatError(() => parseEventLine(JSON.stringify({ ...event, prev: 'x' }), 6)).detail).toContain('prev');
    expect(formatError(() => parseHeader('{"format":"oncegate-journal/1","exportedAt":"x","fromPosition":5,"toPosition":4,"publicKeyId":null}')).line).toBe(1);
  });
});
