export { describeEventStoreContract } from './event-store-contract';
export type { EventStoreContractHarness } from './event-store-contract';
export { storePair, type StorePair } from './store-pair';
