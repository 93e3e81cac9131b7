import { Client } from 'pg';
// The tests start PostgreSQL as the local deployment does: one implementation, in deploy/local.
export { startPostgres } from '@oncegate/deploy-local';
export type { PostgresHandle, StartPostgresOptions } from '@oncegate/deploy-local';


/** One statement on a connection of its own, opened and ended around it: for tests and benches that look at the server. */
export async function queryOnce<Row extends Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<Row[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>(text, values)).rows;
  } finally {
    await client.end();
  }
}
