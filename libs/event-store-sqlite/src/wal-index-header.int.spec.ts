import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { walIndexHeader } from './wal-index-header';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A WAL file with a table and two connections on it, as the writer thread's and another process's. */
function walFile() {
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-wal-header-'));
  dirs.push(dir);
  const file = join(dir, 'events.db');
  const own = new DatabaseSync(file);
  own.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER)');
  const other = new DatabaseSync(file);
  /** One commit of `own`, with the header read under its write lock before it, as the writer thread does. */
  const ownCommit = (header: ReturnType<typeof walIndexHeader>) => {
    own.exec('BEGIN IMMEDIATE; INSERT INTO t VALUES (1)');
    const before = header.read();
    own.exec('COMMIT');
    return before;
  };
  return { file, own, other, ownCommit };
}

describe('the WAL index header: whether anyone committed since a known commit', () => {
  it('given a commit read around under its write lock, then the header after it is known, and stays so until another connection commits', () => {
    const { file, own, other, ownCommit } = walFile();
    const header = walIndexHeader(file);
    try {
      const after = header.afterOwnCommit(ownCommit(header));
      expect(after).toBeDefined();
      expect(header.is(after!)).toBe(true);
      // Reads and checkpoints change nothing committed, and not the header.
      other.prepare('SELECT count(*) FROM t').get();
      other.exec('PRAGMA wal_checkpoint(PASSIVE)');
      expect(header.is(after!)).toBe(true);
      other.exec('INSERT INTO t VALUES (2)');
      expect(header.is(after!)).toBe(false);
    } finally {
      header.close();
      own.close();
      other.close();
    }
  });

  it("given another connection's commit between a commit and the read after it, then the header after the commit is not known", () => {
    const { file, own, other, ownCommit } = walFile();
    const header = walIndexHeader(file);
    try {
      const before = ownCommit(header);
      other.exec('INSERT INTO t VALUES (2)');
      expect(header.afterOwnCommit(before)).toBeUndefined();
      expect(header.afterOwnCommit(undefined)).toBeUndefined();
    } finally {
      header.close();
      own.close();
      other.close();
    }
  });

  it('given a file whose index is not a file (exclusive locking mode), then nothing is read and nothing is ever the same', () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-wal-header-'));
    dirs.push(dir);
    const file = join(dir, 'events.db');
    const db = new DatabaseSync(file);
    db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)');
    const header = walIndexHeader(file);
    try {
      expect(header.read()).toBeUndefined();
      expect(header.is(new Uint8Array(48))).toBe(false);
    } finally {
      header.close();
      db.close();
    }
  });
});
