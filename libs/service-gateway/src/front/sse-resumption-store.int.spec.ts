import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { BlobCipher } from '@oncegate/sealed-store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseEventId } from './sse-event-id';
import { SseResumptionStore } from './sse-resumption-store';

const HOUR = 60 * 60_000;
const SESSION = '0190c3c4-7a1e-7b2c-9d3e-4f5a6b7c8d9e';

function message(id: number): JSONRPCMessage {
  return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `answer ${id}` }] } } as JSONRPCMessage;
}

describe('the SSE resumption store (a SQLite file, sealed messages, a retention)', () => {
  let dir: string;
  let now: number;
  const cipher = new BlobCipher({ id: 'k1', key: randomBytes(32) });
  const clock = { now: () => new Date(now) };
  const stores: SseResumptionStore[] = [];

  const open = (retentionMs = HOUR) => {
    const store = new SseResumptionStore({ file: join(dir, 'mcp-streams.db'), cipher, clock, retentionMs });
    stores.push(store);
    return store;
  };
  const replay = async (store: SseResumptionStore, lastEventId: string) => {
    const sent: Array<{ eventId: string; message: JSONRPCMessage }> = [];
    await store.forSession(SESSION).replayEventsAfter(lastEventId, { send: async (eventId, m) => void sent.push({ eventId, message: m }) });
    return sent;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-sse-store-'));
    now = Date.parse('2026-12-01T10:00:00.000Z');
  });

  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('given messages of a stream, when a client resumes after one of them, then the later ones are replayed, also by a new process on the file', async () => {
    const store = open();
    const events = store.forSession(SESSION, () => ({ requestIds: [7], journalPosition: 42 }));
    const priming = await events.storeEvent('stream-a', {} as JSONRPCMessage);
    const first = await events.storeEvent('stream-a', message(7));
    await events.storeEvent('stream-b', message(8));
    const second = await events.storeEvent('stream-a', message(9));

    expect((await replay(store, priming)).map((sent) => sent.eventId)).toEqual([first, second]);
    expect(await replay(store, first)).toEqual([{ eventId: second, message: message(9) }]);
    await store.close();

    const restarted = open();
    expect((await replay(restarted, priming)).map((sent) => sent.message)).toEqual([message(7), message(9)]);
    expect(await restarted.callsOf(SESSION, 'stream-a')).toEqual({ requestIds: [7], journalPosition: 42 });
    expect(await restarted.callsOf(SESSION, 'stream-b')).toBeUndefined();
    // Another session's streams are not this one's, even under the same stream id.
    expect(await restarted.holds('0190c3c4-0000-7b2c-9d3e-4f5a6b7c8d9e', 'stream-a')).toBe(false);
  });

  it('given a priming event, when it is stored, then its row holds no ciphertext, and a sealed priming row of an older version still replays nothing', async () => {
    const store = open();
    const events = store.forSession(SESSION, () => ({ requestIds: [3], journalPosition: 5 }));
    const priming = await events.storeEvent('stream-a', {} as JSONRPCMessage);
    const answer = await events.storeEvent('stream-a', message(3));
    await store.close();

    const file = new DatabaseSync(join(dir, 'mcp-streams.db'));
    const rows = file.prepare('SELECT seq, key_id, length(iv) AS iv, length(tag) AS tag, length(ciphertext) AS text, calls FROM sse_messages ORDER BY seq').all();
    expect(rows).toEqual([
      { seq: parseEventId(priming)!.sequence, key_id: '', iv: 0, tag: 0, text: 0, calls: JSON.stringify({ requestIds: [3], journalPosition: 5 }) },
      { seq: parseEventId(answer)!.sequence, key_id: 'k1', iv: 12, tag: 16, text: expect.any(Number), calls: null },
    ]);
    // An older version sealed the priming event's `{}`: such a row is opened and skipped, as before.
    const sealed = cipher.seal(Buffer.from('{}'), Buffer.from(`${SESSION}\u0000stream-b`));
    file
      .prepare('INSERT INTO sse_messages (seq, session_id, stream_id, stored_at, key_id, iv, tag, ciphertext, calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)')
      .run(parseEventId(answer)!.sequence + 1, SESSION, 'stream-b', now, sealed.keyId, sealed.iv, sealed.tag, sealed.ciphertext);
    file.close();

    const restarted = open();
    expect(await replay(restarted, priming)).toEqual([{ eventId: answer, message: message(3) }]);
    const later = await restarted.forSession(SESSION).storeEvent('stream-b', message(4));
    expect(await replay(restarted, 'stream-b.-1')).toEqual([{ eventId: later, message: message(4) }]);
  });

  it('given a message older than the retention and a fresh one, when the store sweeps, then the old one is gone and the fresh one still replays', async () => {
    const store = open(HOUR);
    const events = store.forSession(SESSION);
    const priming = await events.storeEvent('stream-a', {} as JSONRPCMessage);
    const old = await events.storeEvent('stream-a', message(1));
    now += HOUR - 1_000;
    const fresh = await events.storeEvent('stream-a', message(2));
    now += 2_000;

    expect(await store.sweep()).toBe(2);
    expect(await replay(store, priming)).toEqual([{ eventId: fresh, message: message(2) }]);
    expect(await replay(store, old)).toEqual([{ eventId: fresh, message: message(2) }]);
    expect(await store.holds(SESSION, 'stream-a')).toBe(true);

    now += HOUR;
    expect(await store.sweep()).toBe(1);
    expect(await replay(store, priming)).toEqual([]);
    expect(await store.holds(SESSION, 'stream-a')).toBe(false);
    // Sequence numbers are never reused: a message stored now comes after every id handed out before.
    const later = await events.storeEvent('stream-a', message(3));
    expect(parseEventId(later)!.sequence).toBeGreaterThan(parseEventId(fresh)!.sequence);
    expect(await replay(store, fresh)).toEqual([{ eventId: later, message: message(3) }]);
  });

  it('given the index on stored_at an earlier version made, when the store opens the file, then it is dropped, and the sweep keeps a fresh row numbered from 1 and deletes it once old', async () => {
    await open().close();
    const file = new DatabaseSync(join(dir, 'mcp-streams.db'));
    file.exec('CREATE INDEX sse_messages_stored_at ON sse_messages (stored_at)');
    const sealed = cipher.seal(Buffer.from(JSON.stringify(message(1))), Buffer.from(`${SESSION}\u0000stream-a`));
    file
      .prepare('INSERT INTO sse_messages (seq, session_id, stream_id, stored_at, key_id, iv, tag, ciphertext, calls) VALUES (1, ?, ?, ?, ?, ?, ?, ?, NULL)')
      .run(SESSION, 'stream-a', now, sealed.keyId, sealed.iv, sealed.tag, sealed.ciphertext);
    file.close();

    const store = open(HOUR);
    const indexes = new DatabaseSync(join(dir, 'mcp-streams.db'), { readOnly: true });
    expect(indexes.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sse_messages' ORDER BY name").all()).toEqual([{ name: 'sse_messages_stream' }]);
    indexes.close();
    expect(await store.sweep()).toBe(0);
    expect(await replay(store, 'stream-a.-1')).toEqual([{ eventId: 'stream-a.1', message: message(1) }]);
    now += HOUR + 1;
    expect(await store.sweep()).toBe(1);
    expect(await store.holds(SESSION, 'stream-a')).toBe(false);
  });

  it('given messages past the retention while the gateway was stopped, when it starts, then they are deleted before anything is served', async () => {
    const store = open(HOUR);
    const priming = await store.forSession(SESSION).storeEvent('stream-a', {} as JSONRPCMessage);
    await store.forSession(SESSION).storeEvent('stream-a', message(1));
    await store.close();

    now += HOUR + 1;
    const restarted = open(HOUR);
    await restarted.start();
    const file = new DatabaseSync(join(dir, 'mcp-streams.db'), { readOnly: true });
    expect(file.prepare('SELECT count(*) AS n FROM sse_messages').get()).toEqual({ n: 0 });
    file.close();
    expect(await replay(restarted, priming)).toEqual([]);
  });

  it('given a running store, when messages age past the retention, then a periodic sweep deletes them', async () => {
    const store = open(1_000);
    expect(store.sweepEveryMs).toBe(250);
    await store.start();
    const priming = await store.forSession(SESSION).storeEvent('stream-a', {} as JSONRPCMessage);
    await store.forSession(SESSION).storeEvent('stream-a', message(1));
    expect(await replay(store, priming)).toHaveLength(1);
    now += 1_001;
    const deadline = Date.now() + 5_000;
    while ((await store.holds(SESSION, 'stream-a')) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await store.holds(SESSION, 'stream-a')).toBe(false);
  });

  it('given a file an earlier version wrote with the event store, when the store opens it, then those messages are dropped and it works', async () => {
    const legacy = openSqliteEventStore({ file: join(dir, 'mcp-streams.db'), synchronous: 'NORMAL' });
    await legacy.appendToStream(`mcp-sse-${SESSION}-stream-a`, [{ type: 'SseMessageStored', data: { keyId: 'k1', iv: '', tag: '', ciphertext: '' } }]);
    await legacy.close();

    const store = open();
    const file = new DatabaseSync(join(dir, 'mcp-streams.db'), { readOnly: true });
    const tables = file.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all();
    file.close();
    expect(tables).toEqual([{ name: 'sse_messages' }]);
    const eventId = await store.forSession(SESSION).storeEvent('stream-a', message(1));
    expect(await replay(store, 'stream-a.-1')).toEqual([{ eventId, message: message(1) }]);
  });

  it('given the file as the previous version wrote it (AUTOINCREMENT), when the store opens it, then its messages keep their ids and new ones come after them', async () => {
    const file = new DatabaseSync(join(dir, 'mcp-streams.db'));
    file.exec(`CREATE TABLE sse_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, stream_id TEXT NOT NULL,
      stored_at INTEGER NOT NULL, key_id TEXT NOT NULL, iv BLOB NOT NULL, tag BLOB NOT NULL, ciphertext BLOB NOT NULL, calls TEXT);
      CREATE INDEX sse_messages_stream ON sse_messages (session_id, stream_id, seq);
      CREATE INDEX sse_messages_stored_at ON sse_messages (stored_at);`);
    const insert = file.prepare('INSERT INTO sse_messages (session_id, stream_id, stored_at, key_id, iv, tag, ciphertext, calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    const aad = Buffer.from(`${SESSION}\u0000stream-a`);
    for (const [index, stored] of [{}, message(1)].entries()) {
      const sealed = cipher.seal(Buffer.from(JSON.stringify(stored)), aad);
      insert.run(SESSION, 'stream-a', now, sealed.keyId, sealed.iv, sealed.tag, sealed.ciphertext, index === 0 ? JSON.stringify({ requestIds: [1], journalPosition: 3 }) : null);
    }
    file.close();

    const store = open();
    const table = new DatabaseSync(join(dir, 'mcp-streams.db'), { readOnly: true });
    expect((table.prepare("SELECT sql FROM sqlite_master WHERE name = 'sse_messages'").get() as { sql: string }).sql).not.toMatch(/AUTOINCREMENT/);
    table.close();
    expect(await replay(store, 'stream-a.1')).toEqual([{ eventId: 'stream-a.2', message: message(1) }]);
    expect(await store.callsOf(SESSION, 'stream-a')).toEqual({ requestIds: [1], journalPosition: 3 });
    const next = await store.forSession(SESSION).storeEvent('stream-a', message(2));
    expect(parseEventId(next)!.sequence).toBeGreaterThan(2);
    expect((await replay(store, 'stream-a.2')).map((sent) => sent.message)).toEqual([message(2)]);
  });

  it('given two processes storing on one file at once, then no number is handed out twice and each replays its own', async () => {
    const first = open();
    const second = open();
    const a = first.forSession(SESSION);
    const b = second.forSession(SESSION);
    const ids = await Promise.all(
      Array.from({ length: 40 }, (_, n) => (n % 2 === 0 ? a : b).storeEvent(n % 2 === 0 ? 'stream-a' : 'stream-b', message(n))),
    );
    expect(new Set(ids.map((id) => parseEventId(id)!.sequence)).size).toBe(40);
    expect((await replay(second, 'stream-a.-1')).map((sent) => sent.eventId)).toEqual(ids.filter((_, n) => n % 2 === 0));
    expect((await replay(first, 'stream-b.-1')).map((sent) => sent.eventId)).toEqual(ids.filter((_, n) => n % 2 === 1));
  });

  it('given messages stored in one turn, then they are written together, each stored before its id is given, and a later process numbers after them even with its clock turned back', async () => {
    const store = open();
    const events = store.forSession(SESSION);
    const ids = await Promise.all([{}, message(1), message(2), message(3)].map((stored) => events.storeEvent('stream-a', stored as JSONRPCMessage)));
    const sequences = ids.map((id) => parseEventId(id)!.sequence);
    expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);
    expect(new Set(sequences).size).toBe(4);
    // Stored before the ids were given: another connection on the file sees every one of them.
    const file = new DatabaseSync(join(dir, 'mcp-streams.db'), { readOnly: true });
    expect(file.prepare('SELECT count(*) AS n FROM sse_messages').get()).toEqual({ n: 4 });
    file.close();
    expect((await replay(store, ids[0]!)).map((sent) => sent.eventId)).toEqual(ids.slice(1));
    await events.storeEvent('stream-a', message(4));
    await store.close();

    now -= 24 * HOUR;
    const later = open(48 * HOUR);
    const next = await later.forSession(SESSION).storeEvent('stream-a', message(5));
    expect(parseEventId(next)!.sequence).toBeGreaterThan(sequences.at(-1)! + 1);
    expect((await replay(later, ids[3]!)).map((sent) => sent.message)).toEqual([message(4), message(5)]);
  });

  it('given the file refusing a write for a reason other than being unwritable, when messages are stored, then each still gets an id (it is sent, not kept), the failure is reported, and later ones are kept again', async () => {
    const failures: unknown[] = [];
    const store = new SseResumptionStore({ file: join(dir, 'mcp-streams.db'), cipher, clock, retentionMs: HOUR, onWriteFailed: (error) => failures.push(error) });
    stores.push(store);
    const events = store.forSession(SESSION);
    const priming = await events.storeEvent('stream-a', {} as JSONRPCMessage);
    const kept = await events.storeEvent('stream-a', message(1));
    const other = new DatabaseSync(join(dir, 'mcp-streams.db'));
    other.exec("CREATE TRIGGER refuse BEFORE INSERT ON sse_messages BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END");
    const [lost, alsoLost] = await Promise.all([events.storeEvent('stream-a', message(2)), events.storeEvent('stream-a', message(3))]);
    // Each id names the last stored message of the stream: a resume from it replays what is stored after it.
    expect([lost, alsoLost]).toEqual([kept, kept]);
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toMatch(/refused by a trigger/);
    other.exec('DROP TRIGGER refuse');
    other.close();
    const later = await events.storeEvent('stream-a', message(4));
    expect((await replay(store, priming)).map((sent) => [sent.eventId, sent.message])).toEqual([
      [kept, message(1)],
      [later, message(4)],
    ]);
  });

  it('given a sealed message edited in the file, when it is replayed, then it is refused rather than sent', async () => {
    const store = open();
    await store.forSession(SESSION).storeEvent('stream-a', message(1));
    expect(await store.holds(SESSION, 'stream-a')).toBe(true);
    const file = new DatabaseSync(join(dir, 'mcp-streams.db'));
    file.prepare("UPDATE sse_messages SET stream_id = 'stream-b'").run();
    file.close();
    await expect(replay(store, 'stream-b.-1')).rejects.toThrow(/authentication failed/);
  });
});
