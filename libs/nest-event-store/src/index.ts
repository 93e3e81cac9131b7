export { EVENT_STORE, EventStoreModule } from './event-store.module';
export type { EventStoreModuleOptions } from './event-store.module';
export { createEventStoreMicroservice } from './event-store.microservice';
export { EventStoreContext, EventStoreTransport } from './event-store.transport';
export type { EventStoreTransportOptions } from './event-store.transport';
export { foldParked, PARKED_EVENT_TYPES, ParkedReplayRefusal, readParked, requestReplay } from './parked-events';
export type {
  EventParkedData,
  ParkedEvent,
  ParkedEventDataOf,
  ParkedEventHandledData,
  ParkedReplayFailedData,
  ParkedReplayRequestedData,
  ParkedState,
} from './parked-events';
