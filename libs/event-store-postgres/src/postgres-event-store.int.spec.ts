import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from 'pg';
import { describeEventStoreContract } from '@oncegate/event-store/testing';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { openPostgresEventStore } from './postgres-event-store';

/** A store's place on the test server: the database URL and a schema of its own. */
interface PostgresLocation {
  readonly url: string;
  readonly schema: string;
}

// The run's shared server; each test gets a fresh schema.

describeEventStoreContract<PostgresLocation>('postgres', {
  async createLocation() {
    const handle = await sharedPostgres();
    return { url: handle.url(), schema: `contract_${randomBytes(6).toString('hex')}` };
  },
  async open({ url, schema }) {
    return openPostgresEventStore({ url, schema, pollIntervalMs: 1000 });
  },
  async disposeLocation({ url, schema }) {
    const client = new Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  },
  childProcess: {
    module: fileURLToPath(new URL('./index.ts', import.meta.url)),
    config: ({ url, schema }) => ({ url, schema, pollIntervalMs: 1000 }),
  },
});
