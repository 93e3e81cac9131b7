// The tests start PostgreSQL as the local deployment does: one implementation, in deploy/local.
export { startPostgres } from '@oncegate/deploy-local';
export type { PostgresHandle, StartPostgresOptions } from '@oncegate/deploy-local';
