import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storePair, type StorePair } from '@oncegate/event-store/testing';
import { openSqliteEventStore, type SqliteEventStore } from './sqlite-event-store';

/** Two store objects on one SQLite file in a temporary folder of their own, removed at close. */
export function openSqliteStorePair(): StorePair<SqliteEventStore> {
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-pair-'));
  const first = openSqliteEventStore({ file: join(dir, 'events.db') });
  const second = openSqliteEventStore({ file: join(dir, 'events.db') });
  return storePair(first, second, () => rmSync(dir, { recursive: true, force: true }));
}
