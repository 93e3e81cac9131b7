import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { storePair, type StorePair } from '@oncegate/event-store/testing';
import { openPostgresEventStore, type PostgresEventStore } from './postgres-event-store';

/** Two store objects on a schema of their own (`<prefix>_<random>`) of the server at `url`, dropped at close. */
export async function openPostgresStorePair(url: string, prefix: string): Promise<StorePair<PostgresEventStore>> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const first = await openPostgresEventStore({ url, schema });
  const second = await openPostgresEventStore({ url, schema });
  return storePair(first, second, async () => {
    const client = new Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });
}
