// How a process hosts a service: its stores opened from the configuration, the Nest microservice on the journal,
// the process's start, ready signal and stop, the prepared calls and the injection tokens.
export { configOption, configOrExit, jsonOption, wholeNumber } from './command-args';
export { closeHost, closeInOrder, coHosting, createStoreDatabase, heldBeforeSend, loadTools, microservice, openDataFolder, openHost, openVault, SERVICE_CONSUMERS, serveServices, startOrUndo, storeLocation, type CoHosting, type DataFolder, type Host, type RunningService, type ServiceDefinition, type StartOptions } from './host';
export { PreparedCalls, type PreparedCall } from './prepared-calls';
export { announceReady, clearReadyFile, formatDuration, prepareReadyFile, readyFileOption, sinceProcessStart } from './ready-signal';
export { runServiceProcess, SERVICE_PROCESS_HELP, serviceMain, StartupError, startupFailure, stoppedCleanly, untilSignal } from './service-process';
export type { StoredResult } from './stored-result';
export { APPROVAL_TIMEOUT_MS, CLOCK, DELIVERY_TRACKER, DISPATCHER_ID, POLICY, PREPARED_CALLS, SEALED_STORE, TOOLS, VAULT } from './tokens';
