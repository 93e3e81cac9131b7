import { Client, escapeIdentifier } from 'pg';
import { EventStoreOpenError, EventStoreUnavailableError } from '@oncegate/event-store';
import { isUnavailable, missingDatabaseAdvice, NO_SUCH_DATABASE, postgresDetail, type PostgresServer } from './postgres-errors';
import { postgresServerOf } from './postgres-event-store';

/** SQLSTATE of a `CREATE DATABASE` whose database exists already (made meanwhile by someone else). */
const DUPLICATE_DATABASE = '42P04';

/** Databases every PostgreSQL server has, to connect to while the store's own does not exist yet. */
const MAINTENANCE_DATABASES = ['postgres', 'template1'] as const;

/**
 * Creates the database a store URL names, on its server, as the URL's user (who needs the `CREATEDB` privilege):
 * connected to the server's maintenance database, since the store's own does not exist yet. `created` is false when
 * the database was there already. Errors name the server and the user, never the URL's password.
 */
export async function createPostgresDatabase(url: string): Promise<{ readonly server: PostgresServer; readonly created: boolean }> {
  const server = postgresServerOf({ connectionString: url });
  // The URL as it may be shown: without its password or its query (which may hold one).
  const shown = new URL(url);
  shown.password = '';
  shown.search = '';
  const where = shown.toString();
  let lastMissing: unknown;
  for (const maintenance of MAINTENANCE_DATABASES) {
    const admin = new URL(url);
    admin.pathname = `/${encodeURIComponent(maintenance)}`;
    const client = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5_000, application_name: 'oncegate-init' });
    // A connection the server ends is reported by the failing query; without a listener the event would end the process.
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query(`CREATE DATABASE ${escapeIdentifier(server.database)}`);
      return { server, created: true };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === DUPLICATE_DATABASE) return { server, created: false };
      if (code === NO_SUCH_DATABASE) {
        lastMissing = error;
        continue;
      }
      if (isUnavailable(error)) throw new EventStoreUnavailableError(where, postgresDetail(error));
      if (code === '42501') {
        throw new EventStoreOpenError(
          where,
          'access_denied',
          postgresDetail(error),
          `user ${escapeIdentifier(server.user)} may not create databases there (it needs CREATEDB); ${missingDatabaseAdvice(server)}`,
        );
      }
      if (typeof code === 'string' && code.startsWith('28')) throw new EventStoreOpenError(where, 'access_denied', postgresDetail(error));
      throw error;
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  throw new EventStoreOpenError(where, 'no_database', postgresDetail(lastMissing), `neither of the databases every server has (${MAINTENANCE_DATABASES.join(', ')}) is there to connect to; ${missingDatabaseAdvice(server)}`);
}
