// Public surface of @oncegate/projections: explicit named exports only.

export { jsonProblem, matchesFilter, type Projection, type ProjectionCell, type ProjectionFilter, type ProjectionParam, type ProjectionParams, type ProjectionRow } from './projection';

export {
  JOURNAL_EXPORT_FORMAT,
  JournalFileError,
  eventsFromJournalFile,
  eventsFromStore,
  journalFileSource,
  storeSource,
  type EventSourceOptions,
  type ProjectionSource,
  type StoreEventSourceOptions,
} from './event-sources';

export {
  CHECKPOINT_FORMAT,
  DEFAULT_CHECKPOINT_EVERY,
  ProjectionCheckpointError,
  ProjectionParamError,
  projectionParams,
  ProjectionStateError,
  readCheckpoint,
  runProjection,
  type ProjectionCheckpoint,
  type ProjectionRunResult,
  type RunProjectionOptions,
} from './run-projection';

export {
  BUILTIN_PROJECTIONS,
  ProjectionModuleError,
  isBuiltinProjection,
  loadProjectionModule,
  projectionProblems,
  type AnyProjection,
  type LoadProjectionOptions,
  type LoadedProjection,
} from './load-projection';

export {
  DEFAULT_BATCH_EVENTS,
  DEFAULT_BATCH_MS,
  DEFAULT_CLAIM_MS,
  ProjectionClaimedError,
  ProjectionClaimLostError,
  defaultTableName,
  projectInto,
  projectionClaimName,
  type ProjectIntoOptions,
  type ProjectIntoResult,
  type ProjectionBatch,
} from './follow-projection';

export {
  CHECKPOINT_TABLE,
  ProjectionTableConflictError,
  ProjectionTargetError,
  SqlTarget,
  parseSqlTarget,
  shownTarget,
  type SqlCheckpoint,
  type SqlTargetSpec,
} from './sql-target';

export {
  ProjectionColumnTypeError,
  ProjectionKeyError,
  planTableWrite,
  type ColumnType,
  type TableColumn,
  type TablePlan,
  type WrittenTable,
} from './sql-table-plan';

export {
  UnsupportedRowsFormatError,
  columnsOf,
  formatRows,
  rowsFormatOf,
  toCsv,
  writeRows,
  type RowsFormat,
} from './write-rows';

export {
  progressReporter,
  renderProgress,
  type ProgressOutput,
  type ProgressReporter,
  type ProgressReporterOptions,
} from './progress';

export { fingerprintIndex, type FingerprintEntry, type FingerprintIndexState } from './builtin/fingerprint-index';
export { NO_RUN, runsByActor, type RunEntry, type RunSource, type RunsByActorState } from './builtin/runs-by-actor';
export { openExecutions, type OpenExecution, type OpenExecutionsState, type OpenStatus } from './builtin/open-executions';
export {
  DEFAULT_DUPLICATE_WINDOW_MS,
  intentBodyOf,
  possibleDuplicateIntents,
  possibleDuplicateIntentsProjection,
  type IntentAcceptance,
  type IntentBody,
  type PossibleDuplicateIntentsOptions,
  type PossibleDuplicateIntentsState,
} from './builtin/possible-duplicate-intents';

export {
  InvalidInvestigationSubjectError,
  correlationSummary,
  detailOf,
  formatInvestigation,
  investigate,
  parseInvestigationSubject,
  type Answer,
  type AttachedCall,
  type AttemptOfExecution,
  type DeliveryFacts,
  type DeliveryOfExecution,
  type ExecutionSummary,
  type FirstCallFacts,
  type FirstCallOfExecution,
  type Investigation,
  type InvestigationSubject,
  type MarkerProbeFact,
  type NewExecution,
  type ObservedOutcome,
  type OutcomeFacts,
  type OutcomeKind,
  type OutcomeOfExecution,
  type ProcessFacts,
  type ProcessVerdict,
  type SecondCallFacts,
  type TimelineEntry,
} from './investigate';
export { gatherInvestigationEvents } from './gather-investigation-events';
export { journalFileStreams, JournalVerificationError, verifyExport, type JournalTrust } from './verified-journal';
