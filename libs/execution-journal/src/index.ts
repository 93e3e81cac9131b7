export { isoNow, systemClock } from './clock';
export type { Clock } from './clock';
export { eventsToAppend, executionAsOf, foldRecorded, loadExecution, runExecutionCommand, runExecutionCommands, stepTakenAlready, toDomainEvent } from './execution-journal';
export type { AppendContext, CommandOptions, CommandOutcome, LoadedExecution, PlannedCommand, StreamEventAt } from './execution-journal';
export {
  idempotencyKeyClaimEntry,
  intentClaimEntry,
  readIdempotencyKeyClaim,
  readIntentClaim,
  startClaimedExecution,
} from './intent-claims';
export type { IdempotencyKeyClaimedData, IntentClaim, ReadClaim } from './intent-claims';
export { ExecutionWatcher } from './execution-watcher';
export { executionsWithEvent } from './execution-scan';
export { KeyedTurns } from './keyed-turns';
export { newUlid } from './ulid';
export { InlineSteps } from './inline-steps';
export type { InlineStep } from './inline-steps';
export { activeTraceparent, traceContextFrom } from './trace-context';
