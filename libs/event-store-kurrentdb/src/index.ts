export { KurrentDbEventStore, LAYOUT_VERSION, openKurrentDbEventStore } from './kurrentdb-event-store';
export type { KurrentDbClientApi, KurrentDbEventStoreOptions } from './kurrentdb-event-store';
export { openKurrentDbEventStore as openEventStore } from './kurrentdb-event-store';
export { ForeignRecordError } from './record-encoding';
