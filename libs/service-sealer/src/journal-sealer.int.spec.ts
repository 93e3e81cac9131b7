import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { systemClock } from '@oncegate/execution-journal';
import { SEAL_STREAM } from '@oncegate/journal';
/* eslint-disable @nx/enforce-module-boundaries -- the same full-disk helper and polling the gateway's tests use */
import { fillDisk, freeDisk } from '../../../test/support/full-disk';
import { eventually } from '../../../test/support/journal';
/* eslint-enable @nx/enforce-module-boundaries */
import { JournalSealer } from './journal-sealer';

vi.mock('node:sqlite', async (original) => {
  // eslint-disable-next-line @nx/enforce-module-boundaries -- see above
  const { trackedSqlite } = await import('../../../test/support/full-disk');
  return trackedSqlite(await original());
});

describe('the journal sealer on a full disk (SQLite event store that cannot grow)', () => {
  let dir: string;
  let store: SqliteEventStore;
  let sealer: JournalSealer | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-sealer-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    for (let i = 0; i < 20; i += 1) await store.appendToStream(`execution-${i}`, [{ type: 'ExecutionAccepted', data: { n: i } }]);
  });

  afterEach(async () => {
    await freeDisk();
    vi.restoreAllMocks();
    await sealer?.stop().catch(() => undefined);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('given seals cannot be written, when rounds keep failing, then the pause doubles and few errors are logged, and sealing resumes by itself', async () => {
    const errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const logs = vi.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    await fillDisk();
    sealer = new JournalSealer(store, privateKey, publicKey, systemClock, 10);
    sealer.start();

    // At a fixed 10 ms pace this would be about a hundred failed rounds, each logged.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(errors.mock.calls.length).toBeGreaterThanOrEqual(1);
    expect(errors.mock.calls.length).toBeLessThanOrEqual(4);
    expect(String(errors.mock.calls[0]![0])).toMatch(/sealing failed \(1 in a row; next try in/);
    expect(await store.readStream(SEAL_STREAM)).toEqual([]);

    await freeDisk();
    await eventually(async () => ((await store.readStream(SEAL_STREAM)).length > 0 ? true : undefined), 15_000, 'a seal after the disk has room again');
    // The round says so once its seal is written: the seal can be read a moment before that line is logged.
    const resumed = await eventually(
      () => logs.mock.calls.map((call) => String(call[0])).find((line) => /^sealing resumed after \d+ failed rounds$/.test(line)),
      2_000,
      'the line saying sealing resumed',
    );
    expect(resumed).toMatch(/^sealing resumed after [1-9]\d* failed rounds$/);
  });
});
