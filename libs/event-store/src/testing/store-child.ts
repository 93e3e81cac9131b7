/**
 * A second OS process for the contract suite: opens the same store through the adapter's module and
 * either contends for one stream or writes and reports every acknowledged append on stdout.
 * Run as: node --import tsx store-child.ts '<json ChildTask>'
 */
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { EventStore } from '../event-store';

export interface ChildTask {
  readonly module: string;
  readonly config: unknown;
  /**
   * `contend`: append to one stream with the revision read; `write`: append one event at a time; `contend-many`:
   * as `contend`, each claim in one batch with an event on the child's own companion stream; `write-many`: batches
   * of three streams, two events each; `write-concurrent`: `writers` loops appending at once (every third append a
   * batch of two streams, three events), so the store always has appends in flight.
   */
  readonly mode: 'contend' | 'write' | 'contend-many' | 'write-many' | 'write-concurrent';
  /** `write-concurrent`: how many appends are in flight at once. */
  readonly writers?: number;
  /**
   * `write-concurrent`: after this many acknowledgements, one more writer issues a batch of 2,000 events (stream
   * `<streamId>-big`) and reports `issued-big` once the store has had a turn of the event loop to hand it over.
   */
  readonly bigBatchAfter?: number;
  readonly streamId: string;
  readonly count: number;
  /** Epoch ms to start at, so that two children start together. */
  readonly startAt?: number;
}

export interface ChildReport {
  readonly kind: 'won' | 'conflict' | 'acked' | 'acked-batch' | 'issued-big';
  readonly expected?: number | 'no_stream';
  readonly id?: string;
  readonly position?: number;
  readonly revision?: number;
  readonly streamId?: string;
  /** `contend-many`: the companion event's id, written with a win and never with a conflict. */
  readonly companionId?: string;
  /** `write-many`: the batch's number, its events' ids and positions in batch order (`write-concurrent`: its key). */
  readonly batch?: number | string;
  readonly ids?: readonly string[];
  readonly positions?: readonly number[];
}

async function main(): Promise<void> {
  const task = JSON.parse(process.argv[2] ?? '') as ChildTask;
  const adapter = (await import(pathToFileURL(task.module).href)) as {
    openEventStore(config: unknown): Promise<EventStore> | EventStore;
  };
  const store = await adapter.openEventStore(task.config);
  const report = (line: ChildReport) => process.stdout.write(JSON.stringify(line) + '\n');
  if (task.startAt !== undefined) await new Promise((r) => setTimeout(r, Math.max(0, task.startAt! - Date.now())));
  if (task.mode === 'write-concurrent') {
    let acknowledged = 0;
    let big: Promise<unknown> | undefined;
    const issueBigBatch = () => {
      const ids = Array.from({ length: 2000 }, () => randomUUID());
      big = store
        .appendMany([{ streamId: `${task.streamId}-big`, events: ids.map((id) => ({ id, type: 'Batched', data: { batch: 'big', pad: 'x'.repeat(200) } })) }])
        .then((results) => report({ kind: 'acked-batch', batch: 'big', ids, positions: ids.map((_, i) => results[0]!.position - ids.length + 1 + i) }));
      setImmediate(() => report({ kind: 'issued-big' }));
    };
    await Promise.all(
      Array.from({ length: task.writers ?? 32 }, async (_, writer) => {
        for (let i = 0; i < task.count; i += 1) {
          const batch = `${writer}-${i}`;
          if (i % 3 === 0) {
            const ids = [randomUUID(), randomUUID(), randomUUID()];
            const results = await store.appendMany([
              { streamId: `${task.streamId}-a-${writer % 4}`, events: ids.slice(0, 2).map((id) => ({ id, type: 'Batched', data: { batch } })) },
              { streamId: `${task.streamId}-b-${i % 5}`, events: [{ id: ids[2]!, type: 'Batched', data: { batch } }] },
            ]);
            report({ kind: 'acked-batch', batch, ids, positions: [results[0]!.position - 1, results[0]!.position, results[1]!.position] });
          } else {
            const id = randomUUID();
            const result = await store.appendToStream(`${task.streamId}-s-${writer}`, [{ id, type: 'Written', data: { batch } }]);
            report({ kind: 'acked-batch', batch, ids: [id], positions: [result.position] });
          }
          acknowledged += 1;
          if (acknowledged === task.bigBatchAfter) issueBigBatch();
        }
      }),
    );
    await big;
    await store.close();
    return;
  }
  for (let i = 0; i < task.count; i += 1) {
    const id = randomUUID();
    if (task.mode === 'contend-many') {
      const actual = await store.streamRevision(task.streamId);
      const expected = actual ?? 'no_stream';
      const companionId = randomUUID();
      try {
        await store.appendMany([
          { streamId: `companion-${process.pid}`, events: [{ id: companionId, type: 'Companion', data: { i } }] },
          { streamId: task.streamId, events: [{ id, type: 'Contended', data: { pid: process.pid, i } }], expectedRevision: expected },
        ]);
        report({ kind: 'won', expected, id, companionId });
      } catch (error) {
        if ((error as { kind?: string }).kind !== 'wrong_expected_revision') throw error;
        report({ kind: 'conflict', expected, companionId });
      }
    } else if (task.mode === 'write-many') {
      const streams = [`${task.streamId}-a-${i % 5}`, `${task.streamId}-b-${i % 3}`, `${task.streamId}-c`];
      const ids = streams.flatMap(() => [randomUUID(), randomUUID()]);
      const results = await store.appendMany(
        streams.map((streamId, s) => ({
          streamId,
          events: [0, 1].map((n) => ({ id: ids[s * 2 + n]!, type: 'Batched', data: { pid: process.pid, batch: i } })),
        })),
      );
      const positions = results.flatMap((result) => [result.position - 1, result.position]);
      report({ kind: 'acked-batch', batch: i, ids, positions });
    } else if (task.mode === 'contend') {
      const actual = await store.streamRevision(task.streamId);
      const expected = actual ?? 'no_stream';
      try {
        await store.appendToStream(task.streamId, [{ id, type: 'Contended', data: { pid: process.pid, i } }], {
          expectedRevision: expected,
        });
        report({ kind: 'won', expected, id });
      } catch (error) {
        if ((error as { kind?: string }).kind !== 'wrong_expected_revision') throw error;
        report({ kind: 'conflict', expected });
      }
    } else {
      const streamId = `${task.streamId}-${i % 7}`;
      const result = await store.appendToStream(streamId, [{ id, type: 'Written', data: { pid: process.pid, i } }]);
      report({ kind: 'acked', id, position: result.position, revision: result.nextExpectedRevision, streamId });
    }
  }
  await store.close();
}

main().catch((error) => {
  process.stderr.write(String((error as Error)?.stack ?? error) + '\n');
  process.exit(1);
});
