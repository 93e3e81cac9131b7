// The credential vault and the master keys: the vault file, its journal, its commands (init, set, lock, …) and
// the keys the data folder's secrets are wrapped under. The service that opens credentials for a dispatcher is in
// @oncegate/host-vault (vault-service.ts); this library needs no service host, so a fixture or a command that
// only administers the vault loads nothing else.
export * from './credential-bindings';
export * from './seal-keys';
export * from './vault-admin';
export * from './vault-entry';
export * from './vault-errors';
export * from './vault-file';
export * from './vault-journal';
export * as vaultCrypto from './vault-crypto';
export { DEFAULT_KDF, DEVELOPMENT_KDF, kdfParams, unwrapKey, wrapKey, type WrappedKey } from './vault-crypto';
