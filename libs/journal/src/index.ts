export { eventHash, GENESIS_HASH } from './chain';
export type { ChainedEventFields } from './chain';
