import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync as Database } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { describeEventStoreContract } from '@oncegate/event-store/testing';
import { eventHash, GENESIS_HASH } from '@oncegate/event-store';
import { openSqliteEventStore } from './sqlite-event-store';

describeEventStoreContract<string>('sqlite', {
  async createLocation() {
    return join(mkdtempSync(join(tmpdir(), 'oncegate-sqlite-')), 'events.db');
  },
  async open(file) {
    return openSqliteEventStore({ file, pollIntervalMs: 10 });
  },
  async disposeLocation(file) {
    rmSync(join(file, '..'), { recursive: true, force: true });
  },
  childProcess: {
    module: fileURLToPath(new URL('./index.ts', import.meta.url)),
    config: (file) => ({ file, pollIntervalMs: 10 }),
  },
});

describe('sqlite store migration', () => {
  it('given a version 1 store without a hash chain, when opened, then every event is linked and new appends continue the chain', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-sqlite-v1-'));
    const file = join(dir, 'events.db');
    const v1 = new Database(file);
    v1.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY, stream_id TEXT NOT NULL, revision INTEGER NOT NULL,
      event_id TEXT NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, recorded_at TEXT NOT NULL);
      CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO store_meta VALUES ('schema_version', '1');`);
    const insert = v1.prepare('INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
    insert.run('s', 0, 'e1', 'A', '{"n":1}', '{}', '2026-11-30T06:00:00.000Z');
    insert.run('s', 1, 'e2', 'B', '{"n":2}', '{}', '2026-11-30T06:00:01.000Z');
    v1.close();
    const store = openSqliteEventStore({ file });
    await store.appendToStream('s', [{ type: 'C', data: {} }], { expectedRevision: 1 });
    const events = await store.readStream('s');
    expect(events.map((e) => e.prev)).toEqual([GENESIS_HASH, events[0]!.hash, events[1]!.hash]);
    expect(events[0]!.hash).toBe(
      eventHash(GENESIS_HASH, { streamId: 's', revision: 0, id: 'e1', type: 'A', data: { n: 1 }, metadata: {}, recordedAt: '2026-11-30T06:00:00.000Z' }),
    );
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
