import { join } from 'node:path';
import { Client } from 'pg';
import { readAllFrom, type RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';

/** Where a gateway's journal is: its data folder (SQLite, `events.db`), or the PostgreSQL store it was configured with. */
export type JournalLocation = string | { readonly postgresUrl: string };

/** Reads the gateway's journal, as a second process would (the gateway may be running). */
export async function readJournal(location: JournalLocation, streamPrefixes?: string[]): Promise<RecordedEvent[]> {
  if (typeof location !== 'string') return readPostgresJournal(location.postgresUrl, streamPrefixes);
  const store = openSqliteEventStore({ file: join(location, 'events.db') });
  try {
    const events: RecordedEvent[] = [];
    for await (const event of readAllFrom(store, { pageSize: 5000, ...(streamPrefixes ? { filter: { streamPrefixes } } : {}) })) events.push(event);
    return events;
  } finally {
    await store.close();
  }
}

type EventRow = [string, string, number, string, string, unknown, Record<string, unknown>, string, string, string];

/**
 * The events table of the store's schema (`oncegate`), read with a plain client in global order: the end-to-end
 * suites do not import the adapter, whose own tests use their PostgreSQL harness.
 */
async function readPostgresJournal(url: string, streamPrefixes?: string[]): Promise<RecordedEvent[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<EventRow>({
      text: 'SELECT position, stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash FROM oncegate.events ORDER BY position',
      rowMode: 'array',
    });
    return rows
      .map(([position, streamId, revision, id, type, data, metadata, recordedAt, prev, hash]) => ({
        streamId,
        revision,
        position: Number(position),
        id,
        type,
        data,
        metadata,
        recordedAt,
        prev,
        hash,
      }))
      .filter((event) => streamPrefixes === undefined || streamPrefixes.some((prefix) => event.streamId.startsWith(prefix)));
  } finally {
    await client.end();
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
