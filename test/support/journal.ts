import { join } from 'node:path';
import { readAllFrom, type EventStore, type RecordedEvent } from '@oncegate/event-store';
import { openPostgresEventStore } from '@oncegate/event-store-postgres';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';

/** Where a gateway's journal is: its data folder (SQLite, `events.db`), or the PostgreSQL store it was configured with. */
export type JournalLocation = string | { readonly postgresUrl: string };

/** Opens the journal as a second process would (the gateway may be running). */
export async function openJournal(location: JournalLocation): Promise<EventStore> {
  return typeof location === 'string'
    ? openSqliteEventStore({ file: join(location, 'events.db') })
    : openPostgresEventStore({ url: location.postgresUrl, pollIntervalMs: 1000 });
}

/** Reads the gateway's journal, as a second process would (the gateway may be running). */
export async function readJournal(location: JournalLocation, streamPrefixes?: string[]): Promise<RecordedEvent[]> {
  const store = await openJournal(location);
  try {
    const events: RecordedEvent[] = [];
    for await (const event of readAllFrom(store, { pageSize: 5000, ...(streamPrefixes ? { filter: { streamPrefixes } } : {}) })) events.push(event);
    return events;
  } finally {
    await store.close();
  }
}

/** Event types of one execution's stream, in order. */
export async function executionEvents(location: JournalLocation, executionId: string): Promise<string[]> {
  return (await readJournal(location, [`execution-${executionId}`])).map((event) => event.type);
}

export async function executionIds(location: JournalLocation): Promise<string[]> {
  const events = await readJournal(location, ['execution-']);
  return [...new Set(events.map((event) => event.streamId.slice('execution-'.length)))];
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
