import { closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { EventStore } from '@oncegate/event-store';
import { openPostgresEventStore } from '@oncegate/event-store-postgres';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { startPostgres } from '../test/support/postgres';
import { ACCEPTED_METADATA, ACCEPTED_PAYLOAD } from './fixtures';
import { machineLine, ms, percentile, printTable, rate } from './table';

const payload = ACCEPTED_PAYLOAD;
/** Appends made by 64 writers before each store's measured phases. */
const WARM_UP_APPENDS = 64 * 100;
const metadata = ACCEPTED_METADATA;

function fsyncFloor(dir: string, iterations: number) {
  const file = join(dir, 'fsync-probe.bin');
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(4096, 7);
  const timings = (sync: (fd: number) => void) => {
    const samples: number[] = [];
    for (let i = 0; i < iterations; i += 1) {
      writeSync(fd, block);
      const start = process.hrtime.bigint();
      sync(fd);
      samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    return samples.sort((a, b) => a - b);
  };
  const fdatasync = timings(fdatasyncSync);
  const fsync = timings(fsyncSync);
  closeSync(fd);
  rmSync(file);
  return { fdatasync, fsync };
}

async function appendLatency(store: EventStore, writers: number, total: number, prefix = 'execution') {
  const perWriter = Math.ceil(total / writers);
  const samples: number[] = [];
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      for (let i = 0; i < perWriter; i += 1) {
        const t0 = process.hrtime.bigint();
        await store.appendToStream(`${prefix}-w${writers}-${writer}-${i % 50}`, [{ type: 'ExecutionAccepted', data: payload, metadata }]);
        samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  samples.sort((a, b) => a - b);
  return { samples, seconds, events: perWriter * writers };
}

async function fill(store: EventStore, events: number) {
  const batch = Array.from({ length: 500 }, () => ({ type: 'Dispatched', data: payload, metadata }));
  for (let written = 0; written < events; written += batch.length) {
    await store.appendToStream(`bulk-${written % 997}`, batch);
  }
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    allowNegative: true,
    options: {
      dir: { type: 'string', default: '.oncegate/bench' },
      events: { type: 'string', default: '200000' },
      appends: { type: 'string', default: '2000' },
      synchronous: { type: 'string', default: 'FULL' },
      postgres: { type: 'boolean', default: true },
    },
  });
  const dir = resolve(values.dir!, `store-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const readEvents = Number(values.events);
  const appends = Number(values.appends);
  const synchronous = values.synchronous as 'FULL' | 'NORMAL';
  const fs = statfsSync(dir);
  process.stdout.write(
    `Event store benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ` +
      `${Math.round(totalmem() / 2 ** 30)} GiB, data in ${dir} (fs type 0x${fs.type.toString(16)}), synchronous=${synchronous}\n`,
  );

  try {
    const floor = fsyncFloor(dir, 300);
    printTable('fsync floor (4 KiB write then sync, same folder)', [
      { call: 'fdatasync', p50_ms: ms(percentile(floor.fdatasync, 50)), p99_ms: ms(percentile(floor.fdatasync, 99)) },
      { call: 'fsync', p50_ms: ms(percentile(floor.fsync, 50)), p99_ms: ms(percentile(floor.fsync, 99)) },
    ]);
    const floorP50 = percentile(floor.fdatasync, 50);

    const appendRows: Array<Record<string, string | number>> = [];
    const readRows: Array<Record<string, string | number>> = [];
    const measure = async (name: string, store: EventStore) => {
      // Not measured: the first appends of a process compile the write path (about a fifth slower at 64 writers for
      // the first few thousand), and each store's first pages are made. The figures are the steady state after them.
      await appendLatency(store, 64, WARM_UP_APPENDS, 'warm-up');
      for (const writers of [1, 64]) {
        const result = await appendLatency(store, writers, writers === 1 ? appends : appends * 8);
        const p50 = percentile(result.samples, 50);
        appendRows.push({
          store: name,
          writers,
          appends: result.events,
          p50_ms: ms(p50),
          p99_ms: ms(percentile(result.samples, 99)),
          'p50 / fsync floor': (p50 / floorP50).toFixed(2) + 'x',
          'events/s': rate(result.events, result.seconds),
        });
      }
      await fill(store, readEvents);
      let start = process.hrtime.bigint();
      let read = 0;
      let after = 0;
      for (;;) {
        const page = await store.readAll({ after, maxCount: 1000 });
        if (page.events.length === 0) break;
        read += page.events.length;
        after = page.lastPosition;
      }
      const readSeconds = Number(process.hrtime.bigint() - start) / 1e9;
      start = process.hrtime.bigint();
      let caught = 0;
      const subscription = store.subscribeToAll(() => {
        caught += 1;
      });
      await subscription.caughtUp;
      const catchUpSeconds = Number(process.hrtime.bigint() - start) / 1e9;
      await subscription.stop();
      readRows.push(
        { store: name, reader: 'read all, pages of 1000', events: read, seconds: readSeconds.toFixed(2), 'events/s': rate(read, readSeconds) },
        { store: name, reader: 'catch-up subscription', events: caught, seconds: catchUpSeconds.toFixed(2), 'events/s': rate(caught, catchUpSeconds) },
      );
      await store.close();
    };

    await measure(`sqlite (synchronous=${synchronous})`, openSqliteEventStore({ file: join(dir, 'events.db'), synchronous }));
    if (values.postgres) {
      // PostgreSQL 15 with its durable defaults (fsync on, synchronous_commit on), on loopback, data in the temporary folder.
      const server = await startPostgres({ fast: false });
      try {
        await measure('postgres 15 (loopback)', await openPostgresEventStore({ url: server.url(), schema: 'bench' }));
      } finally {
        await server.stop();
      }
    }
    printTable('append (one event per append, group commit on)', appendRows);
    printTable(`reading ~${readEvents.toLocaleString('en-US')} events (~${JSON.stringify(payload).length + JSON.stringify(metadata).length} bytes each)`, readRows);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
