// The tests start PostgreSQL as the local deployment does: one implementation, in deploy/local.
export { startPostgres } from '../../deploy/local/postgres';
export type { PostgresHandle, StartPostgresOptions } from '../../deploy/local/postgres';
