export { eventHash, GENESIS_HASH } from './chain';
export type { ChainedEventFields } from './chain';
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
