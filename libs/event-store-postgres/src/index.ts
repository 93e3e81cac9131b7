export { PostgresEventStore, openPostgresEventStore } from './postgres-event-store';
export type { PostgresEventStoreOptions } from './postgres-event-store';
export { openPostgresEventStore as openEventStore } from './postgres-event-store';
export { surviveServerLoss, unavailableOr } from './postgres-errors';
export { createPostgresDatabase } from './create-database';
export { listenerConfig, PostgresListener } from './postgres-listener';
