/*
 * The journal export: NDJSON, one header line then one line per event in global order. Lines are
 * produced and consumed without their trailing newline (a writer appends '\n').
 */

export const JOURNAL_EXPORT_FORMAT = 'oncegate-journal/1';

export interface JournalExportHeader {
  readonly format: typeof JOURNAL_EXPORT_FORMAT;
  /** ISO-8601 time of the export. */
  readonly exportedAt: string;
  /** The export holds positions (fromPosition, toPosition]: 0 means from the journal's start. */
  readonly fromPosition: number;
  readonly toPosition: number;
  /** `publicKeyId` of the sealing key, when the exporter knows it. Informative: the verifier uses the key given. */
  readonly publicKeyId: string | null;
}

/** One exported event: exactly the store's `RecordedEvent` fields. */
export interface JournalEvent {
  readonly position: number;
  readonly streamId: string;
  readonly revision: number;
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly recordedAt: string;
  readonly prev: string;
  readonly hash: string;
}

/** A line of an export that does not parse. `line` is 1-based (the header is line 1). */
export class JournalFormatError extends Error {
  readonly kind = 'journal_format' as const;
  constructor(
    readonly line: number,
    readonly detail: string,
  ) {
    super(`line ${line}: ${detail}`);
    this.name = 'JournalFormatError';
  }
}

export function formatHeader(header: Omit<JournalExportHeader, 'format'>): string {
  return JSON.stringify({
    format: JOURNAL_EXPORT_FORMAT,
    exportedAt: header.exportedAt,
    fromPosition: header.fromPosition,
    toPosition: header.toPosition,
    publicKeyId: header.publicKeyId,
  });
}

/** Fixed key order, `position` first (the verifier reads it cheaply when it scans past a failure). */
export function formatEventLine(event: JournalEvent): string {
  return JSON.stringify({
    position: event.position,
    streamId: event.streamId,
    revision: event.revision,
    id: event.id,
    type: event.type,
    data: event.data,
    metadata: event.metadata,
    recordedAt: event.recordedAt,
    prev: event.prev,
    hash: event.hash,
  });
}

const HEX64 = /^[0-9a-f]{64}$/;
const EVENT_KEYS = ['position', 'streamId', 'revision', 'id', 'type', 'data', 'metadata', 'recordedAt', 'prev', 'hash'];
const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function parseObject(line: string, lineNumber: number, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw new JournalFormatError(lineNumber, `${what} is not JSON (${(error as Error).message})`);
  }
  if (!isPlainObject(value)) throw new JournalFormatError(lineNumber, `${what} is not a JSON object`);
  return value;
}

export function parseHeader(line: string, lineNumber = 1): JournalExportHeader {
  const value = parseObject(line, lineNumber, 'header');
  if (value['format'] !== JOURNAL_EXPORT_FORMAT) {
    throw new JournalFormatError(lineNumber, `header format is not "${JOURNAL_EXPORT_FORMAT}"`);
  }
  if (typeof value['exportedAt'] !== 'string') throw new JournalFormatError(lineNumber, 'header exportedAt is not a string');
  const { fromPosition, toPosition, publicKeyId } = value;
  if (!isCount(fromPosition) || !isCount(toPosition) || toPosition < fromPosition) {
    throw new JournalFormatError(lineNumber, 'header fromPosition/toPosition are not positions with from <= to');
  }
  if (publicKeyId !== null && typeof publicKeyId !== 'string') {
    throw new JournalFormatError(lineNumber, 'header publicKeyId is neither a string nor null');
  }
  return { format: JOURNAL_EXPORT_FORMAT, exportedAt: value['exportedAt'], fromPosition, toPosition, publicKeyId };
}

/** Parses and shape-checks one event line; unknown or missing fields are refused (nothing unhashed may ride along). */
export function parseEventLine(line: string, lineNumber: number): JournalEvent {
  const value = parseObject(line, lineNumber, 'event line');
  // Ten keys, all of them known, means no unknown key either (checked without a per-key loop: this is hot).
  if (Object.keys(value).length !== EVENT_KEYS.length || !EVENT_KEYS.every((key) => key in value)) {
    const unknown = Object.keys(value).find((key) => !EVENT_KEYS.includes(key));
    if (unknown !== undefined) throw new JournalFormatError(lineNumber, `unknown field "${unknown}"`);
    const missing = EVENT_KEYS.filter((key) => !(key in value));
    throw new JournalFormatError(lineNumber, `missing field(s) ${missing.join(', ')}`);
  }
  const { position, streamId, revision, id, type, metadata, recordedAt, prev, hash } = value;
  if (!isCount(position) || position < 1) throw new JournalFormatError(lineNumber, 'position is not a positive integer');
  if (typeof streamId !== 'string' || streamId === '') throw new JournalFormatError(lineNumber, 'streamId is not a non-empty string');
  if (!isCount(revision)) throw new JournalFormatError(lineNumber, 'revision is not a non-negative integer');
  if (typeof id !== 'string') throw new JournalFormatError(lineNumber, 'id is not a string');
  if (typeof type !== 'string') throw new JournalFormatError(lineNumber, 'type is not a string');
  if (!isPlainObject(metadata)) throw new JournalFormatError(lineNumber, 'metadata is not an object');
  if (typeof recordedAt !== 'string') throw new JournalFormatError(lineNumber, 'recordedAt is not a string');
  if (typeof prev !== 'string' || !HEX64.test(prev)) throw new JournalFormatError(lineNumber, 'prev is not a SHA-256 hex digest');
  if (typeof hash !== 'string' || !HEX64.test(hash)) throw new JournalFormatError(lineNumber, 'hash is not a SHA-256 hex digest');
  return value as unknown as JournalEvent;
}

const POSITION_PREFIX = /^\{"position":(\d{1,15}),/;

/**
 * The position of an event line, read from its prefix when the line has the exported key order (no
 * full parse), else by parsing; `undefined` when the line has none. Used to scan past a failure.
 */
export function peekPosition(line: string): number | undefined {
  const match = POSITION_PREFIX.exec(line);
  if (match !== null) return Number(match[1]);
  try {
    const value: unknown = JSON.parse(line);
    return isPlainObject(value) && isCount(value['position']) ? value['position'] : undefined;
  } catch {
    return undefined;
  }
}
