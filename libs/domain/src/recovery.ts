/**
 * What happens after an attempt was dispatched and no outcome came back (docs/design.md section 6), as tables. The
 * decider consults the same tables before it allows a second Dispatched, so the rule lives in one place.
 */
import { addMs, isBefore, SECOND_MS, type IsoInstant } from './durations';
import type { DefiniteOutcome, MarkerState, ReviewReason, UnknownOutcomeReason } from './events';
import type { ExecutionState } from './execution-state';
import { recoveryPolicyOf, type OperationClass, type RecoveryAction } from './operation-class';

/** Recovery evidence for the current attempt. */
export type RecoveryEvidence =
  | { readonly kind: 'none' }
  | { readonly kind: 'status_query'; readonly preconditionHolds: boolean }
  | { readonly kind: 'marker_probe'; readonly marker: MarkerState; readonly exitStatus: number | null };

export interface UnknownOutcomeContext {
  readonly operationClass: OperationClass;
  readonly evidence: RecoveryEvidence;
  /**
   * `to_resume`: the target ran the current attempt as a task, recorded before the outcome was lost, and it was not
   * resumed yet. Whatever the class, the task is asked first: it is the target's own answer.
   */
  readonly task?: 'to_resume' | 'none';
  /** From the contract's marker protocol (remote commands). */
  readonly markerBeforeWork: boolean;
  /** Dispatched events so far. */
  readonly attempts: number;
  readonly maxAttempts: number;
}

export type RecoveryStep =
  /** Dispatch again with the same idempotency key (the execution id). */
  | { readonly kind: 'redispatch_same_key'; readonly nextAttempt: number }
  /** Ask the target for the outcome of the task it ran the attempt as (recorded in `AttemptTaskStarted`). */
  | { readonly kind: 'resume_task' }
  /** Gather evidence: run the contract's status query. */
  | { readonly kind: 'query_status' }
  /** Gather evidence: probe the durable marker on the host. */
  | { readonly kind: 'probe_marker' }
  /** The marker says the command finished: record its outcome instead of sending anything. */
  | { readonly kind: 'report_outcome_from_marker'; readonly outcome: DefiniteOutcome; readonly exitStatus: number }
  /** Stop and append ReviewRequired; the agent is told the outcome is unknown. */
  | { readonly kind: 'hold_for_review'; readonly reason: ReviewReason }
  /** No report will come: the dispatcher is gone, or the attempt outlived its deadline. Nothing is sent. */
  | { readonly kind: 'record_unknown_outcome'; readonly attempt: number; readonly reason: UnknownOutcomeReason }
  | { readonly kind: 'wait'; readonly reason: 'attempt_in_flight' | 'awaiting_review'; readonly until: IsoInstant | null }
  | { readonly kind: 'nothing_to_recover' };

export type RecoveryStepKind = RecoveryStep['kind'];

/** A verdict before attempt limits and exit statuses are applied. */
type Verdict =
  | { readonly kind: 'redispatch' }
  | { readonly kind: 'query_status' }
  | { readonly kind: 'probe_marker' }
  | { readonly kind: 'report_from_marker' }
  | { readonly kind: 'hold'; readonly reason: ReviewReason };

const REDISPATCH: Verdict = { kind: 'redispatch' };

/** conditional_write: re-dispatch only while the precondition still holds. */
const STATUS_QUERY_RULES: Readonly<Record<'holds' | 'no_longer_holds', Verdict>> = {
  holds: REDISPATCH,
  no_longer_holds: { kind: 'hold', reason: 'precondition_no_longer_holds' },
};

/** remote_command: what each marker state means, by whether the contract writes the marker before the work. */
const MARKER_RULES: Readonly<Record<MarkerState, Readonly<Record<'before_work' | 'not_before_work', Verdict>>>> = {
  completed: { before_work: { kind: 'report_from_marker' }, not_before_work: { kind: 'report_from_marker' } },
  started: {
    before_work: { kind: 'hold', reason: 'marker_started' },
    not_before_work: { kind: 'hold', reason: 'marker_started' },
  },
  absent: {
    before_work: REDISPATCH,
    not_before_work: { kind: 'hold', reason: 'marker_absent_without_marker_before_work' },
  },
  probe_failed: {
    before_work: { kind: 'hold', reason: 'marker_probe_failed' },
    not_before_work: { kind: 'hold', reason: 'marker_probe_failed' },
  },
};

/** Each class's action (operation-class.ts) with the evidence it needs. */
const AFTER_UNKNOWN_OUTCOME: Readonly<Record<RecoveryAction, (context: UnknownOutcomeContext) => Verdict>> = {
  redispatch: () => REDISPATCH,
  redispatch_same_key: () => REDISPATCH,
  query_status_then_decide: ({ evidence }) =>
    evidence.kind === 'status_query'
      ? STATUS_QUERY_RULES[evidence.preconditionHolds ? 'holds' : 'no_longer_holds']
      : { kind: 'query_status' },
  probe_marker_then_decide: ({ evidence, markerBeforeWork }) =>
    evidence.kind === 'marker_probe'
      ? MARKER_RULES[evidence.marker][markerBeforeWork ? 'before_work' : 'not_before_work']
      : { kind: 'probe_marker' },
  hold_for_review: () => ({ kind: 'hold', reason: 'irreversible_outcome_unknown' }),
};

/** The next step for an attempt whose outcome is unknown. */
export function recoveryStepAfterUnknownOutcome(context: UnknownOutcomeContext): RecoveryStep {
  // The target's own record of the attempt comes before any class's evidence: it may hold the outcome itself.
  if (context.task === 'to_resume') return { kind: 'resume_task' };
  const action = recoveryPolicyOf(context.operationClass).afterUnknownOutcome;
  const verdict = AFTER_UNKNOWN_OUTCOME[action](context);
  switch (verdict.kind) {
    case 'redispatch':
      return context.attempts >= context.maxAttempts
        ? { kind: 'hold_for_review', reason: 'attempt_limit_reached' }
        : { kind: 'redispatch_same_key', nextAttempt: context.attempts + 1 };
    case 'query_status':
      return { kind: 'query_status' };
    case 'probe_marker':
      return { kind: 'probe_marker' };
    case 'report_from_marker':
      return reportFromMarker(context.evidence);
    case 'hold':
      return { kind: 'hold_for_review', reason: verdict.reason };
    default:
      return assertNever(verdict);
  }
}

function reportFromMarker(evidence: RecoveryEvidence): RecoveryStep {
  const exitStatus = evidence.kind === 'marker_probe' ? evidence.exitStatus : null;
  if (exitStatus === null) return { kind: 'hold_for_review', reason: 'marker_completed_without_exit_status' };
  return { kind: 'report_outcome_from_marker', outcome: exitStatus === 0 ? 'succeeded' : 'failed', exitStatus };
}

/** Unknown outcomes recorded by bookkeeping, not by the attempt's own dispatcher, which may still report. */
const RECORDED_BY_BOOKKEEPING: ReadonlySet<UnknownOutcomeReason> = new Set<UnknownOutcomeReason>(['dispatcher_lost', 'attempt_deadline_passed']);

/**
 * Whether the response of `attempt` may still be recorded though the attempt is no longer dispatched: another
 * instance declared it unknown because its dispatcher looked gone or it outlived its deadline (a store outage
 * stops leases being renewed and outcomes being written), while the dispatcher was alive and had the answer.
 * The answer is evidence and settles the execution, as long as nothing was decided on the unknown outcome
 * since: no later attempt and no resolved review.
 */
export function awaitsLateReport(state: ExecutionState, attempt: number): boolean {
  const unknown = state.unknownOutcome;
  if (unknown === null || unknown.attempt !== attempt || state.attempts !== attempt) return false;
  if (!RECORDED_BY_BOOKKEEPING.has(unknown.reason)) return false;
  return state.status === 'outcome_unknown' || (state.status === 'needs_review' && state.review?.resolution === null);
}

/**
 * Whether an earlier attempt's outcome is still unknown: it was recorded unknown and no review since resolved it as
 * not executed. A later attempt that sent nothing then proves nothing of the execution: it cannot be a failure.
 */
export function earlierAttemptMayHaveActed(state: ExecutionState): boolean {
  const unknown = state.unknownOutcome;
  if (unknown === null || unknown.attempt >= state.attempts) return false;
  const review = state.review;
  return !(review !== null && review.resolution === 'not_executed' && review.attempt >= unknown.attempt);
}

/** Whether the current attempt ran as a task at the target and that task was not resumed yet. */
export function taskToResume(state: ExecutionState): boolean {
  return state.attemptTask?.attempt === state.attempts && state.taskCheck?.attempt !== state.attempts;
}

/** Evidence recorded in the state for the current attempt; evidence about an earlier attempt does not count. */
export function recoveryEvidenceOf(state: ExecutionState): RecoveryEvidence {
  if (state.statusQuery && state.statusQuery.attempt === state.attempts) {
    return { kind: 'status_query', preconditionHolds: state.statusQuery.preconditionHolds };
  }
  if (state.markerProbe && state.markerProbe.attempt === state.attempts) {
    return { kind: 'marker_probe', marker: state.markerProbe.marker, exitStatus: state.markerProbe.exitStatus };
  }
  return { kind: 'none' };
}

/**
 * After the attempt timeout (the contract's connect and response timeouts, fixed at acceptance) the dispatcher
 * still gets this long to report: its timers start after `Dispatched` is durable, and recording takes time.
 */
export const ATTEMPT_REPORT_MARGIN_MS = 30 * SECOND_MS;

/** What the store's liveness leases say of the dispatcher that sent the current attempt. */
export type AttemptOwner = 'alive' | 'gone';

/** When a dispatched attempt with no report is settled as unknown by whoever notices; `null` when not dispatched. */
export function attemptDeadline(state: ExecutionState): IsoInstant | null {
  const accepted = state.accepted;
  if (!accepted || state.status !== 'dispatched') return null;
  const dispatchedAt = state.lastDispatch?.dispatchedAt ?? accepted.acceptedAt;
  return addMs(dispatchedAt, accepted.attemptPolicy.attemptTimeoutMs + ATTEMPT_REPORT_MARGIN_MS);
}

/**
 * The next recovery step for an execution as its stream stands at `now`. For a dispatched attempt, `owner` says
 * whether the dispatcher that sent it is still alive (default: assumed alive, so only the deadline applies).
 */
export function nextRecoveryStep(state: ExecutionState, now: IsoInstant, owner: AttemptOwner = 'alive'): RecoveryStep {
  const accepted = state.accepted;
  if (!accepted) return { kind: 'nothing_to_recover' };
  switch (state.status) {
    case 'outcome_unknown':
      return recoveryStepAfterUnknownOutcome({
        operationClass: accepted.operationClass,
        evidence: recoveryEvidenceOf(state),
        task: taskToResume(state) ? 'to_resume' : 'none',
        markerBeforeWork: accepted.attemptPolicy.markerBeforeWork,
        attempts: state.attempts,
        maxAttempts: accepted.attemptPolicy.maxAttempts,
      });
    case 'dispatched': {
      if (owner === 'gone') return { kind: 'record_unknown_outcome', attempt: state.attempts, reason: 'dispatcher_lost' };
      const deadline = attemptDeadline(state)!;
      return isBefore(now, deadline)
        ? { kind: 'wait', reason: 'attempt_in_flight', until: deadline }
        : { kind: 'record_unknown_outcome', attempt: state.attempts, reason: 'attempt_deadline_passed' };
    }
    case 'needs_review':
      return { kind: 'wait', reason: 'awaiting_review', until: null };
    default:
      return { kind: 'nothing_to_recover' };
  }
}

function assertNever(value: never): never {
  throw new TypeError(`unexpected value ${JSON.stringify(value)}`);
}
