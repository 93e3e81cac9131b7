import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Client, escapeIdentifier, Pool } from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EventStoreUnavailableError } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { startPostgres } from '../../../test/support/postgres';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { BlobCipher, type SealingKey } from './blob-cipher';
import { PostgresSealedStore } from './postgres-sealed-store';
import { RecentlySealed } from './recently-sealed';
import { SealedBlobError, sealedAad, SqliteSealedStore, type OpenedBlob, type SealedStore } from './sealed-store';

const CANARY = 'canary-RESULT-9d1e';

/** How the shared tests reach one implementation's storage: open a store on a location, read and edit it raw. */
interface SealedStoreHarness<Location> {
  createLocation(): Promise<Location>;
  open(location: Location, current: SealingKey, previous?: readonly SealingKey[]): Promise<SealedStore>;
  /** Whether the bytes appear anywhere in what the storage holds, read without the store. */
  rawContains(location: Location, bytes: Buffer): Promise<boolean>;
  /** Moves the blob to another owner, or replaces its ciphertext, behind the store's back. */
  tamper(location: Location, ref: string, change: 'owner' | 'ciphertext'): Promise<void>;
  disposeLocation(location: Location): Promise<void>;
}

function describeSealedStore<Location>(name: string, harness: SealedStoreHarness<Location>): void {
  describe(`${name} sealed store`, () => {
    const locations: Location[] = [];
    const fresh = async () => {
      const location = await harness.createLocation();
      locations.push(location);
      return location;
    };
    afterEach(async () => {
      for (const location of locations.splice(0)) await harness.disposeLocation(location);
    });

    it(`${name}: given a sealed result, when opened, then the plaintext, owner and digest come back`, async () => {
      const store = await harness.open(await fresh(), { id: 'k1', key: randomBytes(32) });
      const sealed = await store.seal('result', 'ex_1', Buffer.from(`{"token":"${CANARY}"}`));
      expect(sealed.ref).toMatch(/^sealed_[0-9a-f-]{36}$/);
      expect(sealed.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      const opened = await store.open(sealed.ref);
      expect(opened).toMatchObject({ kind: 'result', owner: 'ex_1', digest: sealed.digest });
      expect(opened!.plaintext.toString()).toContain(CANARY);
      expect(await store.open('sealed_missing')).toBeUndefined();
      await store.close();
    });

    it(`${name}: given a blob sealed for an append that was refused, when it is discarded, then it is gone from the storage and the others stay`, async () => {
      const location = await fresh();
      const store = await harness.open(location, { id: 'k1', key: randomBytes(32) });
      const kept = await store.seal('arguments', 'ex_kept', Buffer.from('kept'));
      const refused = await store.seal('arguments', 'ex_refused', Buffer.from(`refused ${CANARY}`));
      await store.discard!(refused.ref);
      expect(await store.open(refused.ref)).toBeUndefined();
      expect((await store.open(kept.ref))!.plaintext.toString()).toBe('kept');
      await store.close();
      // Nothing of it left for another store object on the same storage either.
      const again = await harness.open(location, { id: 'k1', key: randomBytes(32) });
      expect(await again.open(refused.ref)).toBeUndefined();
      await again.close();
    });

    it(`${name}: given blobs sealed one after another, then their refs are distinct and sort by the millisecond they were sealed in`, async () => {
      const store = await harness.open(await fresh(), { id: 'k1', key: randomBytes(32) });
      const refs: string[] = [];
      for (let i = 0; i < 50; i += 1) {
        refs.push((await store.seal('result', `ex_${i}`, Buffer.from(`{"i":${i}}`))).ref);
        if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 2));
      }
      expect(new Set(refs).size).toBe(refs.length);
      // A UUIDv7 starts with its 48-bit millisecond: `sealed_` and the first twelve hex digits, dash included.
      const millisecond = (ref: string) => ref.slice('sealed_'.length, 'sealed_'.length + 13);
      expect([...refs].map(millisecond).sort()).toEqual(refs.map(millisecond));
      expect(new Set(refs.map(millisecond)).size).toBeGreaterThan(1);
      await store.close();
    });

    it(`${name}: given a sealed blob, when the storage is read raw, then the plaintext is not in it`, async () => {
      const location = await fresh();
      const store = await harness.open(location, { id: 'k1', key: randomBytes(32) });
      const sealed = await store.seal('arguments', 'ex_1', Buffer.from(CANARY.repeat(10)));
      await store.close();
      expect(await harness.rawContains(location, Buffer.from(sealed.ref))).toBe(true);
      expect(await harness.rawContains(location, Buffer.from(CANARY))).toBe(false);
    });

    it(`${name}: given a blob sealed by one store object, when another opens the same storage, then it reads the blob`, async () => {
      const location = await fresh();
      const key = { id: 'k1', key: randomBytes(32) };
      const writer = await harness.open(location, key);
      const reader = await harness.open(location, key);
      const sealed = await writer.seal('result', 'ex_shared', Buffer.from('seen by every process'));
      expect((await reader.open(sealed.ref))!.plaintext.toString()).toBe('seen by every process');
      await writer.close();
      await reader.close();
    });

    it(`${name}: given a rotated key, when an old blob is opened, then the previous key opens it`, async () => {
      const location = await fresh();
      const k1 = { id: 'k1', key: randomBytes(32) };
      const before = await harness.open(location, k1);
      const sealed = await before.seal('result', 'ex_1', Buffer.from('old'));
      await before.close();
      const after = await harness.open(location, { id: 'k2', key: randomBytes(32) }, [k1]);
      expect((await after.open(sealed.ref))!.plaintext.toString()).toBe('old');
      await after.close();
      const forgotten = await harness.open(location, { id: 'k2', key: randomBytes(32) });
      await expect(forgotten.open(sealed.ref)).rejects.toThrow(/key k1, which is not configured/);
      await forgotten.close();
    });

    it(`${name}: given a tampered ciphertext or a blob moved to another execution, when opened, then authentication fails`, async () => {
      const location = await fresh();
      const key = { id: 'k1', key: randomBytes(32) };
      const store = await harness.open(location, key);
      const a = await store.seal('result', 'ex_a', Buffer.from('payload-a'));
      const b = await store.seal('result', 'ex_b', Buffer.from('payload-b'));
      await store.close();
      await harness.tamper(location, a.ref, 'owner');
      await harness.tamper(location, b.ref, 'ciphertext');
      const reopened = await harness.open(location, key);
      await expect(reopened.open(a.ref)).rejects.toBeInstanceOf(SealedBlobError);
      await expect(reopened.open(b.ref)).rejects.toThrow(/authentication failed/);
      await reopened.close();
    });
  });
}

describeSealedStore<string>('sqlite', {
  async createLocation() {
    return join(mkdtempSync(join(tmpdir(), 'oncegate-sealed-')), 'sealed.db');
  },
  async open(file, current, previous) {
    return new SqliteSealedStore({ file, current, ...(previous ? { previous } : {}) });
  },
  async rawContains(file, bytes) {
    const read = (path: string) => {
      try {
        return readFileSync(path);
      } catch {
        return Buffer.alloc(0);
      }
    };
    return ['', '-wal'].some((suffix) => read(file + suffix).includes(bytes));
  },
  async tamper(file, ref, change) {
    const raw = new DatabaseSync(file);
    const statement = change === 'owner' ? "UPDATE sealed_blobs SET owner = 'ex_other' WHERE ref = ?" : 'UPDATE sealed_blobs SET ciphertext = zeroblob(9) WHERE ref = ?';
    raw.prepare(statement).run(ref);
    raw.close();
  },
  async disposeLocation(file) {
    rmSync(join(file, '..'), { recursive: true, force: true });
  },
});

/** A PostgreSQL store's place on the test server: the database URL and a schema of its own. */
interface PostgresLocation {
  readonly url: string;
  readonly schema: string;
}

// The contract runs on the run's shared server, a fresh schema per test.

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

describeSealedStore<PostgresLocation>('postgres', {
  async createLocation() {
    return { url: (await sharedPostgres()).url(), schema: `sealed_${randomBytes(6).toString('hex')}` };
  },
  async open({ url, schema }, current, previous) {
    return PostgresSealedStore.open({ url, schema, current, ...(previous ? { previous } : {}) });
  },
  async rawContains({ url, schema }, bytes) {
    // Every column of every row, as the server stores it (bytea compared as bytes, text as UTF-8).
    return withClient(url, async (client) => {
      const { rows } = await client.query<{ row: string }>(`SELECT t::text AS row FROM ${escapeIdentifier(schema)}.sealed_blobs t`);
      const needle = bytes.toString('hex');
      return rows.some(({ row }) => row.includes(bytes.toString('utf8')) || row.includes(needle));
    });
  },
  async tamper({ url, schema }, ref, change) {
    const statement =
      change === 'owner'
        ? `UPDATE ${escapeIdentifier(schema)}.sealed_blobs SET owner = 'ex_other' WHERE ref = $1`
        : `UPDATE ${escapeIdentifier(schema)}.sealed_blobs SET ciphertext = '\\x000000000000000000'::bytea WHERE ref = $1`;
    await withClient(url, (client) => client.query(statement, [ref]));
  },
  async disposeLocation({ url, schema }) {
    await withClient(url, (client) => client.query(`DROP SCHEMA IF EXISTS ${escapeIdentifier(schema)} CASCADE`));
  },
});

describe('postgres sealed store on a server that goes away', () => {
  it('postgres: given the server is down, when a blob is sealed or opened, then the store is unavailable, named without the password, and works again once the server is back', async () => {
    // A server of its own: this test shuts it down.
    const handle = await startPostgres();
    const schema = `sealed_${randomBytes(6).toString('hex')}`;
    const url = handle.url().replace('postgres@', 'postgres:pw-canary-0c1d@');
    const store = await PostgresSealedStore.open({ url, schema, current: { id: 'k1', key: randomBytes(32) } });
    const before = await store.seal('result', 'ex_1', Buffer.from('before'));
    await handle.shutdown();
    try {
      const refused = await store.seal('result', 'ex_2', Buffer.from('while down')).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(EventStoreUnavailableError);
      expect((refused as Error).message).toContain(`postgres://postgres@127.0.0.1:${handle.port}/postgres (schema ${schema})`);
      expect((refused as Error).message).not.toContain('pw-canary-0c1d');
      await expect(store.open(before.ref)).rejects.toBeInstanceOf(EventStoreUnavailableError);
    } finally {
      await handle.start();
    }
    try {
      expect((await store.open(before.ref))!.plaintext.toString()).toBe('before');
    } finally {
      await store.close();
      await handle.stop();
    }
  });
});

describe('sqlite sealed store in the event store file', () => {
  /** A folder with an event store's file, and a sealed store writing to it through that store's writer thread. */
  const inEventsFile = (name: string) => {
    const dir = mkdtempSync(join(tmpdir(), `oncegate-sealed-${name}-`));
    const file = join(dir, 'events.db');
    const events = openSqliteEventStore({ file });
    const key = { id: 'k1', key: randomBytes(32) };
    return { dir, file, events, key, sealed: new SqliteSealedStore({ file, current: key, writer: events }) };
  };

  it('given the event store writer, when a blob is opened right after it is sealed, then it is read before the writer answers and is in the file after', async () => {
    const { dir, file, events, key, sealed } = inEventsFile('unwritten');
    const blob = await sealed.seal('arguments', 'ex_now', Buffer.from('opened at once'));
    expect((await sealed.open(blob.ref))?.plaintext.toString()).toBe('opened at once');
    // The event that references it, appended after the seal, is committed with or after the blob.
    await events.appendToStream('execution-ex_now', [{ type: 'ExecutionAccepted', data: { argumentsRef: blob.ref } }]);
    await sealed.close();
    await events.close();
    const reader = new SqliteSealedStore({ file, current: key });
    expect((await reader.open(blob.ref))?.plaintext.toString()).toBe('opened at once');
    await reader.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('given the event store writer, when a blob is discarded before the writer has answered its insert, then it opens as missing at once and is not in the file after', async () => {
    const { dir, file, events, sealed } = inEventsFile('discard');
    const kept = await sealed.seal('arguments', 'ex_kept', Buffer.from('kept'));
    const refused = await sealed.seal('arguments', 'ex_refused', Buffer.from('refused'));
    const discarding = sealed.discard(refused.ref);
    expect(await sealed.open(refused.ref)).toBeUndefined();
    await discarding;
    await sealed.close();
    await events.close();
    const db = new DatabaseSync(file, { readOnly: true });
    expect(db.prepare('SELECT ref FROM sealed_blobs').all()).toEqual([{ ref: kept.ref }]);
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('given the event store writer, when a blob is sealed and an event references it, then both are stored and read by another connection', async () => {
    const { dir, file, events, key, sealed } = inEventsFile('events');
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

describe('recently sealed plaintexts', () => {
  it('given blobs sealed by this process, then they open from memory as copies, within the bounds, and the rest from the store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-recent-'));
    const inner = new SqliteSealedStore({ file: join(dir, 'sealed.db'), current: { id: 'k', key: randomBytes(32) } });
    let opened = 0;
    const counting: SealedStore = { seal: (...args) => inner.seal(...args), open: (ref) => ((opened += 1), inner.open(ref)), close: () => inner.close() };
    const store = new RecentlySealed(counting, { entries: 2, bytes: 10 });
    try {
      const a = await store.seal('result', 'ex_a', Buffer.from('aaaa'));
      const b = await store.seal('arguments', 'ex_b', Buffer.from('bbbb'));
      const first = (await store.open(a.ref))!;
      expect(first).toMatchObject({ kind: 'result', owner: 'ex_a', digest: a.digest });
      expect(first.plaintext.toString()).toBe('aaaa');
      // A copy: whatever the caller does to it, the next open is the same.
      first.plaintext.fill(0);
      expect((await store.open(a.ref))!.plaintext.toString()).toBe('aaaa');
      expect(opened).toBe(0);
      // Over the count (b, the least recently used, goes) and over the bytes (too large to keep at all).
      const c = await store.seal('result', 'ex_c', Buffer.from('cccc'));
      const big = await store.seal('result', 'ex_d', Buffer.from('dddddddddddd'));
      expect((await store.open(b.ref))!.plaintext.toString()).toBe('bbbb');
      expect((await store.open(big.ref))!.plaintext.toString()).toBe('dddddddddddd');
      expect(opened).toBe(2);
      expect((await store.open(c.ref))!.plaintext.toString()).toBe('cccc');
      expect(await store.open('sealed_unknown')).toBeUndefined();
      expect(opened).toBe(3);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given a blob this process sealed, when it is discarded, then its kept plaintext is zero-filled and dropped and the store deletes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-recent-'));
    const inner = new SqliteSealedStore({ file: join(dir, 'sealed.db'), current: { id: 'k', key: randomBytes(32) } });
    const store = new RecentlySealed(inner);
    try {
      const refused = await store.seal('arguments', 'ex_refused', Buffer.from('refused'));
      const kept = (store as unknown as { recent: { peek(ref: string): OpenedBlob | undefined } }).recent.peek(refused.ref)!.plaintext;
      await store.discard(refused.ref);
      expect(kept.every((byte) => byte === 0)).toBe(true);
      expect(await store.open(refused.ref)).toBeUndefined();
      expect(await inner.open(refused.ref)).toBeUndefined();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('given a call done, when its owner is forgotten, then its kept plaintexts are zero-filled and dropped, and evicted ones too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-recent-'));
    const inner = new SqliteSealedStore({ file: join(dir, 'sealed.db'), current: { id: 'k', key: randomBytes(32) } });
    let opened = 0;
    const counting: SealedStore = { seal: (...args) => inner.seal(...args), open: (ref) => ((opened += 1), inner.open(ref)), close: () => inner.close() };
    const store = new RecentlySealed(counting, { entries: 3 });
    // The plaintext the cache holds (private: nothing outside it may reach the kept buffer, which is the point).
    const keptOf = (ref: string) => (store as unknown as { recent: { peek(ref: string): OpenedBlob | undefined } }).recent.peek(ref)!.plaintext;
    try {
      const args = await store.seal('arguments', 'ex_a', Buffer.alloc(8, 'a'));
      const result = await store.seal('result', 'ex_a', Buffer.alloc(8, 'r'));
      const other = await store.seal('result', 'ex_b', Buffer.alloc(8, 'b'));
      const kept = [keptOf(args.ref), keptOf(result.ref), keptOf(other.ref)];
      store.forget('ex_a');
      expect(kept[0]!.equals(Buffer.alloc(8))).toBe(true);
      expect(kept[1]!.equals(Buffer.alloc(8))).toBe(true);
      expect(kept[2]!.toString()).toBe('bbbbbbbb');
      expect((await store.open(args.ref))!.plaintext.toString()).toBe('aaaaaaaa');
      expect((await store.open(result.ref))!.plaintext.toString()).toBe('rrrrrrrr');
      expect(opened).toBe(2);
      expect((await store.open(other.ref))!.plaintext.toString()).toBe('bbbbbbbb');
      expect(opened).toBe(2);
      // Pushed out by newer seals: zero-filled as it goes.
      for (const owner of ['ex_c', 'ex_d', 'ex_e']) await store.seal('result', owner, Buffer.from('cccc'));
      expect(kept[2]!.equals(Buffer.alloc(8))).toBe(true);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('postgres sealed store, blobs heard by the processes that open them', () => {
  const key: SealingKey = { id: 'k1', key: randomBytes(32) };
  let url: string;
  let schema: string;
  const closing: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const item of closing.splice(0).reverse()) await item.close();
    await withClient(url, (client) => client.query(`DROP SCHEMA IF EXISTS ${escapeIdentifier(schema)} CASCADE`));
  });

  /** The gateway's store (it seals arguments), and authorization's, which hears them, with its statements counted. */
  async function gatewayAndReader() {
    url = (await sharedPostgres()).url();
    schema = `sealed_${randomBytes(6).toString('hex')}`;
    const gateway = await PostgresSealedStore.open({ url, schema, current: key });
    closing.push(gateway);
    const pool = new Pool({ connectionString: url });
    closing.push({ close: () => pool.end() });
    const statements = vi.spyOn(pool, 'query');
    const reader = await PostgresSealedStore.open({ pool, schema, current: key, hear: ['arguments'] });
    closing.push(reader);
    statements.mockClear();
    return { gateway, reader, statements };
  }

  /** Opens `ref` until an open makes no statement (the notification is on its way when the seal resolves). */
  const openedUnread = (reader: PostgresSealedStore, statements: { mock: { calls: unknown[] } }, ref: string) =>
    vi.waitFor(
      async () => {
        const before = statements.mock.calls.length;
        const opened = await reader.open(ref);
        expect(statements.mock.calls.length).toBe(before);
        return opened;
      },
      { timeout: 5_000 },
    );

  it("given a reader that hears arguments, when the gateway seals a call's arguments, then the reader opens them without a read, as stored; a result and a blob too large to be carried are read", async () => {
    const { gateway, reader, statements } = await gatewayAndReader();
    const sealed = await gateway.seal('arguments', 'ex_1', Buffer.from(`{"token":"${CANARY}"}`));
    const opened = await openedUnread(reader, statements, sealed.ref);
    expect(opened).toEqual({ kind: 'arguments', owner: 'ex_1', plaintext: Buffer.from(`{"token":"${CANARY}"}`), digest: sealed.digest });
    statements.mockClear();

    const result = await gateway.seal('result', 'ex_1', Buffer.from('a result'));
    expect((await reader.open(result.ref))?.plaintext.toString()).toBe('a result');
    expect(statements).toHaveBeenCalledTimes(1);
    const large = Buffer.alloc(12_000, 'a');
    const big = await gateway.seal('arguments', 'ex_2', large);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await reader.open(big.ref))?.plaintext.equals(large)).toBe(true);
    expect(statements).toHaveBeenCalledTimes(2);
  });

  it('given a notification anyone could send, when it carries a blob not sealed under the store key, then it is not opened from it: the table says what the blob is', async () => {
    const { gateway, reader, statements } = await gatewayAndReader();
    const genuine = await gateway.seal('arguments', 'ex_1', Buffer.from('genuine'));
    await openedUnread(reader, statements, genuine.ref);
    const channel = `oncegate_sealed_arguments_${createHash('sha256').update(schema).digest('hex').slice(0, 24)}`;
    const forge = (ref: string, text: string) => {
      const sealed = new BlobCipher({ id: 'k1', key: randomBytes(32) }).seal(Buffer.from(text), sealedAad(ref, 'arguments', 'ex_1'));
      return JSON.stringify([ref, 'arguments', 'ex_1', sealed.keyId, sealed.iv.toString('base64'), sealed.tag.toString('base64'), sealed.ciphertext.toString('base64')]);
    };
    // A role that may only connect can still notify: one ref the gateway sealed, one it never did.
    await withClient(url, async (client) => {
      await client.query('SELECT pg_notify($1, $2), pg_notify($1, $3)', [channel, forge(genuine.ref, 'forged'), forge('sealed_made-up', 'made up')]);
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    statements.mockClear();
    expect((await reader.open(genuine.ref))?.plaintext.toString()).toBe('genuine');
    expect(await reader.open('sealed_made-up')).toBeUndefined();
    expect(statements).toHaveBeenCalledTimes(2);
  });
});
