import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describeEventStoreContract } from '@oncegate/event-store/testing';
import { openKurrentDbEventStore } from './kurrentdb-event-store';

/**
 * The shared contract suite against a real KurrentDB (25.1 or later), named by `ONCEGATE_KURRENTDB_URL`
 * (`kurrentdb://localhost:2113?tls=false`). No KurrentDB can be installed where this project's CI runs, so there the
 * suite is reported as skipped with this reason; the adapter's own logic runs the same suite against an in-memory
 * stand-in of the client (kurrentdb-stand-in.unit.spec.ts).
 */
const url = process.env['ONCEGATE_KURRENTDB_URL'];

/** A store's place on the server: the connection string and a namespace of its own. */
interface KurrentDbLocation {
  readonly url: string;
  readonly namespace: string;
}

describeEventStoreContract<KurrentDbLocation>('kurrentdb', {
  ...(url === undefined || url === ''
    ? {
        unavailable:
          'ONCEGATE_KURRENTDB_URL is not set: no KurrentDB server to run against (set it to kurrentdb://host:2113?tls=false, KurrentDB 25.1 or later)',
      }
    : {}),
  async createLocation() {
    // Each test gets a namespace of its own; the server keeps old namespaces' streams (nothing here deletes them).
    return { url: url!, namespace: `contract_${randomBytes(6).toString('hex')}` };
  },
  async open({ url, namespace }) {
    return openKurrentDbEventStore({ url, namespace, pollIntervalMs: 1000 });
  },
  childProcess: {
    module: fileURLToPath(new URL('./index.ts', import.meta.url)),
    config: ({ url, namespace }) => ({ url, namespace, pollIntervalMs: 1000 }),
  },
});
