import type * as NodeSqlite from 'node:sqlite';
import { limitWriterPages } from '@oncegate/event-store-sqlite';

type Connection = NodeSqlite.DatabaseSync;
type SqliteModule = typeof NodeSqlite;

/** Every file-backed SQLite connection opened in this process since the module was tracked, with whether it may write. */
const connections = new Map<Connection, { readonly readOnly: boolean }>();

/**
 * The `node:sqlite` module with its `DatabaseSync` class wrapped so that each connection is remembered: a test
 * registers it with `vi.mock('node:sqlite', async (original) => trackedSqlite(await original()))` and can then
 * fill the files of the code under test as a full disk would.
 */
export function trackedSqlite(original: SqliteModule): SqliteModule {
  class TrackedDatabase extends original.DatabaseSync {
    constructor(...args: ConstructorParameters<typeof original.DatabaseSync>) {
      super(...args);
      const options = args[1];
      const uriReadOnly = args[0] instanceof URL && args[0].searchParams.get('mode') === 'ro';
      connections.set(this, { readOnly: options?.readOnly === true || uriReadOnly });
    }
  }
  return { ...original, DatabaseSync: TrackedDatabase };
}

const UNLIMITED_PAGES = 4_294_967_294;
const SQLITE_FULL = 13;

function insertUntilFull(db: Connection, sql: string, sizes: readonly number[], values: (size: number, n: number) => NodeSqlite.SQLInputValue[]): void {
  let n = 0;
  for (const size of sizes) {
    const statement = db.prepare(sql);
    try {
      for (;;) statement.run(...values(size, (n += 1)));
    } catch (error) {
      if ((error as { errcode?: number }).errcode !== SQLITE_FULL) throw error;
    }
  }
}

function writableByFile(): Map<string, Connection[]> {
  const byFile = new Map<string, Connection[]>();
  for (const [db, { readOnly }] of connections) {
    if (!db.isOpen) {
      connections.delete(db);
      continue;
    }
    const name = db.location();
    // An instance lock (`instances/*.lock`) holds an exclusive transaction for its process's life and stores nothing.
    if (readOnly || name === null || name === '' || name.endsWith('.lock')) continue;
    byFile.set(name, [...(byFile.get(name) ?? []), db]);
  }
  return byFile;
}

/**
 * Makes every open SQLite file of this process full, with real SQLite: each connection may no longer grow its
 * file (`PRAGMA max_page_count` at the current size, which SQLite answers with SQLITE_FULL), the writer threads'
 * connections of the event stores included, and the free room left in its pages is taken by a filler table and
 * by filler rows at the end of an `events` table.
 */
export async function fillDisk(): Promise<void> {
  for (const [file, dbs] of writableByFile()) {
    const first = dbs[0]!;
    first.exec('CREATE TABLE IF NOT EXISTS disk_filler (x BLOB)');
    const pages = (first.prepare('PRAGMA page_count').get() as { page_count: number }).page_count;
    await limitWriterPages(file, pages);
    for (const db of dbs) db.exec(`PRAGMA max_page_count = ${pages}`);
    insertUntilFull(first, 'INSERT INTO disk_filler VALUES (zeroblob(?))', [4000, 1000, 250, 60, 8], (size) => [size]);
    const hasTable = (name: string) => first.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
    if (hasTable('checkpoints')) {
      const taken = (first.prepare("SELECT count(*) AS n FROM checkpoints WHERE consumer LIKE 'zz-disk-filler-%'").get() as { n: number }).n;
      insertUntilFull(first, "INSERT INTO checkpoints (consumer, position, updated_at) VALUES (?, 0, '')", [1000, 200, 40, 0], (size, n) => [
        `zz-disk-filler-${taken + n}-${'x'.repeat(size)}`,
      ]);
    }
    if (hasTable('events')) {
      const next = (first.prepare("SELECT coalesce(max(revision), -1) + 1 AS next FROM events WHERE stream_id = 'disk-filler'").get() as { next: number }).next;
      insertUntilFull(
        first,
        `INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at, prev_hash, hash)
         VALUES ('disk-filler', ?, ?, 'DiskFiller', ?, '{}', '', ?, ?)`,
        [2000, 500, 100, 0],
        // Hashes of the right shape, so the sealer can cover the filler rows once there is room again.
        (size, n) => [next + n, `zz-disk-filler-${next + n}`, JSON.stringify({ pad: 'x'.repeat(size) }), '0'.repeat(64), '0'.repeat(64)],
      );
    }
  }
}

/** Gives the room back: the files may grow again and the filler table is dropped. */
export async function freeDisk(): Promise<void> {
  for (const [file, dbs] of writableByFile()) {
    await limitWriterPages(file, UNLIMITED_PAGES);
    for (const db of dbs) db.exec(`PRAGMA max_page_count = ${UNLIMITED_PAGES}`);
    dbs[0]!.exec('DROP TABLE IF EXISTS disk_filler');
  }
}
