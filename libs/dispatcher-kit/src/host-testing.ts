// The world the conformance suite runs a channel in, for this repository's own tests of a channel (not in the
// package's exports): a store, a vault and dispatchers that can be killed, on temporary files.
export { DispatcherWorld, type DispatcherWorldOptions, type WorldCredential, type WorldDispatcher } from './testing/dispatcher-world';
