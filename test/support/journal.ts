import { join } from 'node:path';
import { readAllFrom, type RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';

/** Reads the gateway's journal from its data folder, as a second process would (the gateway may be running). */
export async function readJournal(dataDir: string, streamPrefixes?: string[]): Promise<RecordedEvent[]> {
  const store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
  try {
    const events: RecordedEvent[] = [];
    for await (const event of readAllFrom(store, { pageSize: 5000, ...(streamPrefixes ? { filter: { streamPrefixes } } : {}) })) events.push(event);
    return events;
  } finally {
    await store.close();
  }
}

/** Event types of one execution's stream, in order. */
export async function executionEvents(dataDir: string, executionId: string): Promise<string[]> {
  return (await readJournal(dataDir, [`execution-${executionId}`])).map((event) => event.type);
}

export async function executionIds(dataDir: string): Promise<string[]> {
  const events = await readJournal(dataDir, ['execution-']);
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
