import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeEventStoreContract } from '@oncegate/event-store/testing';
import { openSqliteEventStore } from './sqlite-event-store';

describeEventStoreContract<string>('sqlite', {
  async createLocation() {
    return join(mkdtempSync(join(tmpdir(), 'oncegate-sqlite-')), 'events.db');
  },
  async open(file) {
    return openSqliteEventStore({ file, pollIntervalMs: 10 });
  },
  async disposeLocation(file) {
    rmSync(join(file, '..'), { recursive: true, force: true });
  },
  childProcess: {
    module: fileURLToPath(new URL('./index.ts', import.meta.url)),
    config: (file) => ({ file, pollIntervalMs: 10 }),
  },
});
