// The chain is defined beside the store port, where every adapter links events; verification uses the same definition.
export { eventHash, GENESIS_HASH } from '@oncegate/event-store/chain';
export type { ChainedEventFields } from '@oncegate/event-store/chain';
export {
  isJournalSealedData,
  planSeal,
  publicKeyId,
  SEAL_EVENT_TYPE,
  SEAL_STREAM,
  SealDigest,
  sealBodyOf,
  SealPlanError,
  signSeal,
  verifySealSignature,
} from './seal';
export type { JournalSealedData, PlanSealInput, SealBody } from './seal';
export {
  formatEventLine,
  formatHeader,
  JOURNAL_EXPORT_FORMAT,
  JournalFormatError,
  parseEventLine,
  parseHeader,
  peekPosition,
} from './export-format';
export type { JournalEvent, JournalExportHeader } from './export-format';
export { AUTO_PARALLEL_AFTER_LINES, verifyJournal, verifyJournalBytes, verifyJournalFile } from './verify';
export type { VerifyFailure, VerifyFailureKind, VerifyOptions, VerifyReport } from './verify';
export { defaultVerifyWorkers } from './verify-pool';
export { splitLines } from './split-lines';
