export { BlobCipher, SealedValueError } from './blob-cipher';
export type { SealedValue, SealingKey } from './blob-cipher';
export { SealedBlobError, SqliteSealedStore } from './sealed-store';
export type { OpenedBlob, SealedBlobWriter, SealedKind, SealedRef, SealedStore, SqliteSealedStoreOptions } from './sealed-store';
export { PostgresSealedStore } from './postgres-sealed-store';
export { RecentlySealed } from './recently-sealed';
export type { RecentlySealedOptions } from './recently-sealed';
export type { PostgresSealedStoreOptions } from './postgres-sealed-store';
