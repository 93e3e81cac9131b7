import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { EventStoreOpenError } from '@oncegate/event-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../test/support/shared-servers';
import { createPostgresDatabase } from './create-database';
import { openPostgresEventStore } from './postgres-event-store';

/** A password in the URL: the shared server trusts `postgres` from loopback, so it is sent nowhere, and must be shown nowhere. */
const PASSWORD = 'pg-pass-canary-3f9d';

const freshName = () => `missing_${randomBytes(5).toString('hex')}`;

/** Runs one statement as the superuser, as an operator would. */
async function sql(text: string): Promise<void> {
  const client = new Client({ connectionString: (await sharedPostgres()).url() });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

describe('postgres: a store URL naming a database the server does not have', () => {
  const made: string[] = [];
  const roles: string[] = [];
  afterAll(async () => {
    for (const database of made) await sql(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    for (const role of roles) await sql(`DROP ROLE IF EXISTS "${role}"`);
  });

  it('given no such database, when the store opens, then it is refused as no_database, naming the database and the server and how to create it, without the password', async () => {
    const server = await sharedPostgres();
    const database = freshName();
    const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${server.port}/${database}`;

    const error = await openPostgresEventStore({ url }).catch((failure: unknown) => failure);

    expect(error).toBeInstanceOf(EventStoreOpenError);
    expect(error).toMatchObject({ kind: 'store_open_failed', problem: 'no_database' });
    const message = (error as Error).message;
    expect(message).toBe(
      `cannot open the store postgres://postgres@127.0.0.1:${server.port}/${database} (schema oncegate): ` +
        `database "${database}" does not exist on 127.0.0.1:${server.port}; create it there as a user allowed to ` +
        `(createdb -h 127.0.0.1 -p ${server.port} -U postgres ${database}, or in psql: CREATE DATABASE "${database}";), then try again ` +
        `(3D000 database "${database}" does not exist)`,
    );
    expect(message).not.toMatch(/SQLite|folder/);
    expect(`${message}\n${(error as Error).stack}`).not.toContain(PASSWORD);
  });

  it('given no such database, when it is created from the store URL, then the store opens on it, and creating it again says it was there', async () => {
    const server = await sharedPostgres();
    const database = freshName();
    made.push(database);
    const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${server.port}/${database}`;

    expect(await createPostgresDatabase(url)).toEqual({ server: { host: '127.0.0.1', port: server.port, user: 'postgres', database }, created: true });
    const store = await openPostgresEventStore({ url });
    await store.appendToStream('s-1', [{ type: 'Made', data: {} }]);
    await store.close();
    expect(await createPostgresDatabase(url)).toMatchObject({ created: false });
  });

  it('given a user without CREATEDB, when it is to create the database, then it is refused as access_denied, saying what the user lacks and how else to create it, without the password', async () => {
    const server = await sharedPostgres();
    const role = `nocreate_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    await sql(`CREATE ROLE "${role}" LOGIN PASSWORD '${PASSWORD}' NOCREATEDB`);
    const database = freshName();

    const error = await createPostgresDatabase(`postgres://${role}:${PASSWORD}@127.0.0.1:${server.port}/${database}`).catch((failure: unknown) => failure);

    expect(error).toBeInstanceOf(EventStoreOpenError);
    expect(error).toMatchObject({ problem: 'access_denied' });
    const message = (error as Error).message;
    expect(message).toContain(`user "${role}" may not create databases there (it needs CREATEDB)`);
    expect(message).toContain(`createdb -h 127.0.0.1 -p ${server.port} -U ${role} ${database}`);
    expect(`${message}\n${(error as Error).stack}`).not.toContain(PASSWORD);
  });
});
