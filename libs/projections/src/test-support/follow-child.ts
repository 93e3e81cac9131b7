/**
 * A follow run in a process of its own, for the test that kills one with SIGKILL mid-run: it follows the store into
 * the target and reports each batch written on stdout (one JSON line).
 * Run as: node --import tsx follow-child.ts '<json FollowTask>'
 */
// eslint-disable-next-line @nx/enforce-module-boundaries -- the integration tests' child runs on the real SQLite adapter
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { projectInto } from '../follow-projection';
import { loadProjectionModule } from '../load-projection';

export interface FollowTask {
  readonly storeFile: string;
  readonly projection: string;
  readonly into: string;
  readonly table?: string;
  readonly params?: Record<string, string>;
  readonly batchEvents: number;
  readonly claimMs?: number;
}

async function main(): Promise<void> {
  const task = JSON.parse(process.argv[2] ?? '') as FollowTask;
  const store = openSqliteEventStore({ file: task.storeFile });
  const { projection } = await loadProjectionModule(task.projection);
  const stopper = new AbortController();
  process.once('SIGTERM', () => stopper.abort());
  await projectInto({
    projection,
    store,
    into: task.into,
    follow: true,
    batchEvents: task.batchEvents,
    batchMs: 60_000,
    ...(task.claimMs === undefined ? {} : { claimMs: task.claimMs }),
    signal: stopper.signal,
    ...(task.table === undefined ? {} : { table: task.table }),
    ...(task.params === undefined ? {} : { params: task.params }),
    onBatch: (batch) => process.stdout.write(`${JSON.stringify(batch)}\n`),
  });
  await store.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
