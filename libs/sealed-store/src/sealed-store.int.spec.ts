import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { SealedBlobError, SqliteSealedStore } from './sealed-store';

const CANARY = 'canary-RESULT-9d1e';

describe('sqlite sealed store', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-sealed-'));
    dirs.push(dir);
    return join(dir, 'sealed.db');
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('given a sealed result, when opened, then the plaintext, owner and digest come back', async () => {
    const store = new SqliteSealedStore({ file: fresh(), current: { id: 'k1', key: randomBytes(32) } });
    const sealed = await store.seal('result', 'ex_1', Buffer.from(`{"token":"${CANARY}"}`));
    expect(sealed.ref).toMatch(/^sealed_[0-9a-f-]{36}$/);
    expect(sealed.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const opened = await store.open(sealed.ref);
    expect(opened).toMatchObject({ kind: 'result', owner: 'ex_1', digest: sealed.digest });
    expect(opened!.plaintext.toString()).toContain(CANARY);
    expect(await store.open('sealed_missing')).toBeUndefined();
    await store.close();
  });

  it('given a sealed blob, when the file is read raw, then the plaintext is not in it', async () => {
    const file = fresh();
    const store = new SqliteSealedStore({ file, current: { id: 'k1', key: randomBytes(32) } });
    await store.seal('arguments', 'ex_1', Buffer.from(CANARY.repeat(10)));
    await store.close();
    for (const suffix of ['', '-wal']) {
      const bytes = (() => {
        try {
          return readFileSync(file + suffix);
        } catch {
          return Buffer.alloc(0);
        }
      })();
      expect(bytes.includes(Buffer.from(CANARY))).toBe(false);
    }
  });

  it('given a rotated key, when an old blob is opened, then the previous key opens it', async () => {
    const file = fresh();
    const k1 = { id: 'k1', key: randomBytes(32) };
    const before = new SqliteSealedStore({ file, current: k1 });
    const sealed = await before.seal('result', 'ex_1', Buffer.from('old'));
    await before.close();
    const after = new SqliteSealedStore({ file, current: { id: 'k2', key: randomBytes(32) }, previous: [k1] });
    expect((await after.open(sealed.ref))!.plaintext.toString()).toBe('old');
    await after.close();
    const forgotten = new SqliteSealedStore({ file, current: { id: 'k2', key: randomBytes(32) } });
    await expect(forgotten.open(sealed.ref)).rejects.toThrow(/key k1, which is not configured/);
    await forgotten.close();
  });

  it('given a tampered ciphertext or a blob moved to another execution, when opened, then authentication fails', async () => {
    const file = fresh();
    const key = { id: 'k1', key: randomBytes(32) };
    const store = new SqliteSealedStore({ file, current: key });
    const a = await store.seal('result', 'ex_a', Buffer.from('payload-a'));
    const b = await store.seal('result', 'ex_b', Buffer.from('payload-b'));
    await store.close();
    const raw = new DatabaseSync(file);
    raw.prepare("UPDATE sealed_blobs SET owner = 'ex_other' WHERE ref = ?").run(a.ref);
    raw.prepare('UPDATE sealed_blobs SET ciphertext = zeroblob(9) WHERE ref = ?').run(b.ref);
    raw.close();
    const reopened = new SqliteSealedStore({ file, current: key });
    await expect(reopened.open(a.ref)).rejects.toBeInstanceOf(SealedBlobError);
    await expect(reopened.open(b.ref)).rejects.toThrow(/authentication failed/);
    await reopened.close();
  });
});

describe('sqlite sealed store in the event store file', () => {
  it('given the event store writer, when a blob is sealed and an event references it, then both are stored and read by another connection', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-sealed-events-'));
    const file = join(dir, 'events.db');
    const events = openSqliteEventStore({ file });
    const key = { id: 'k1', key: randomBytes(32) };
    const sealed = new SqliteSealedStore({ file, current: key, writer: events });
    const blobs = await Promise.all(Array.from({ length: 20 }, (_, i) => sealed.seal('result', `ex_${i}`, Buffer.from(`body ${i}`))));
    await events.appendToStream('execution-ex_1', [{ type: 'OutcomeObserved', data: { resultRef: blobs[1]!.ref, digest: blobs[1]!.digest } }]);
    await events.close();
    await sealed.close();

    const reader = new SqliteSealedStore({ file, current: key });
    for (const [i, blob] of blobs.entries()) expect((await reader.open(blob.ref))?.plaintext.toString()).toBe(`body ${i}`);
    await reader.close();
    const db = new DatabaseSync(file, { readOnly: true });
    expect(db.prepare('SELECT count(*) AS n FROM events').get()).toEqual({ n: 1 });
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
