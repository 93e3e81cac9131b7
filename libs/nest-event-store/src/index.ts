export { EVENT_STORE, EventStoreModule } from './event-store.module';
export type { EventStoreModuleOptions } from './event-store.module';
export { EventStoreContext, EventStoreTransport } from './event-store.transport';
export type { EventStoreTransportOptions } from './event-store.transport';
