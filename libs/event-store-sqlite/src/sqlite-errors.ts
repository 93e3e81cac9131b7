import { EventStoreOpenError } from '@oncegate/event-store';

/**
 * SQLite's errors as the event-store port speaks of them, for every SQLite file of the project (the event store,
 * the MCP resumption file). node:sqlite reports SQLite's result code as a number (`errcode`); these helpers name
 * it (`SQLITE_FULL`, …) and sort it.
 */

/** SQLite's primary result codes by number: node:sqlite reports `errcode`, the adapter speaks in SQLite's names. */
const RESULT_CODES = [
  'OK', 'ERROR', 'INTERNAL', 'PERM', 'ABORT', 'BUSY', 'LOCKED', 'NOMEM', 'READONLY', 'INTERRUPT', 'IOERR', 'CORRUPT',
  'NOTFOUND', 'FULL', 'CANTOPEN', 'PROTOCOL', 'EMPTY', 'SCHEMA', 'TOOBIG', 'CONSTRAINT', 'MISMATCH', 'MISUSE', 'NOLFS',
  'AUTH', 'FORMAT', 'RANGE', 'NOTADB', 'NOTICE', 'WARNING',
];
const SQLITE_CONSTRAINT_UNIQUE = 2067;

export function isUniqueViolation(error: unknown): boolean {
  return (error as { errcode?: number })?.errcode === SQLITE_CONSTRAINT_UNIQUE;
}

/** `SQLITE_<NAME>` of a driver error (its primary result code), else its message. */
export function sqliteCode(error: unknown): string {
  const errcode = (error as { errcode?: unknown })?.errcode;
  if (typeof errcode === 'number') return `SQLITE_${RESULT_CODES[errcode & 0xff] ?? errcode}`;
  return String((error as Error)?.message ?? error);
}

/** Driver errors that mean the file cannot take writes now (full disk, I/O error, turned read-only, locked), not a bug. */
export function isUnwritable(error: unknown): boolean {
  return /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|BUSY|LOCKED)/.test(sqliteCode(error));
}

/** An error while opening `file`, as the port's typed error naming the file and what to do; others as they are. */
export function openFailure(file: string, error: unknown): unknown {
  const code = sqliteCode(error);
  if (/^SQLITE_(NOTADB|CORRUPT)/.test(code)) return new EventStoreOpenError(file, 'corrupt', code);
  if (/^SQLITE_READONLY/.test(code)) return new EventStoreOpenError(file, 'read_only', code);
  if (/^SQLITE_(CANTOPEN|PERM|AUTH)/.test(code)) return new EventStoreOpenError(file, 'cannot_open', code);
  if (/^SQLITE_(FULL|IOERR)/.test(code)) return new EventStoreOpenError(file, 'no_space', code);
  return error;
}
