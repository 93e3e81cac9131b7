import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { pathToFileURL } from 'node:url';

/**
 * Proof that a process on this machine is gone. Each gateway process holds an exclusive lock on a small file of
 * its own in the data folder for as long as it lives; the kernel drops the lock when the process ends, however
 * it ends (kill -9 included). Another process that can take the lock knows for certain that its holder is gone,
 * without waiting for its lease to run out. (Every process on one SQLite store runs on one machine: its WAL
 * needs shared memory.)
 */
export class InstanceLock {
  private constructor(
    private readonly db: DatabaseSync,
    private readonly file: string,
  ) {}

  /** Takes the lock for `instance` in `dir` and keeps it until `release`. */
  static hold(dir: string, instance: string): InstanceLock {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = lockFile(dir, instance);
    const db = new DatabaseSync(file, { timeout: 0 });
    // An exclusive transaction that never ends: the lock lives as long as this connection does.
    db.exec('BEGIN EXCLUSIVE');
    return new InstanceLock(db, file);
  }

  release(): void {
    this.db.close();
    rmSync(this.file, { force: true });
  }
}

/** The file as a URI that SQLite opens only when it exists (it creates nothing). */
function existingFile(path: string): URL {
  const uri = pathToFileURL(path);
  uri.searchParams.set('mode', 'rw');
  return uri;
}

function lockFile(dir: string, instance: string): string {
  if (!/^[0-9]+-[0-9a-f]{8}$/.test(instance)) throw new Error(`not an instance id: ${instance}`);
  return join(dir, `${instance}.lock`);
}

/**
 * `gone` when the instance's lock can be taken (its process ended; the file is then removed), `alive` when it
 * is held, `unknown` when this machine has no lock file for it (another machine, or an id from before locks).
 */
export function probeInstanceLock(dir: string, instance: string): 'alive' | 'gone' | 'unknown' {
  let path: string;
  try {
    path = lockFile(dir, instance);
  } catch {
    return 'unknown';
  }
  if (!existsSync(path)) return 'unknown';
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(existingFile(path), { timeout: 0 });
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
  } catch (error) {
    db?.close();
    // SQLITE_BUSY (5) or SQLITE_LOCKED (6), with or without an extended code.
    const code = (error as { errcode?: number }).errcode;
    if (code !== undefined && [5, 6].includes(code & 0xff)) return 'alive';
    return 'unknown';
  }
  db.close();
  rmSync(path, { force: true });
  return 'gone';
}
