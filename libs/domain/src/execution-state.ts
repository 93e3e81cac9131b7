/**
 * The state `evolve` derives from an execution stream (docs/design.md section 4). It keeps what the decider, matching,
 * recovery and the agent-facing status (docs/design.md section 9) need, and nothing else.
 */
import type { IsoInstant } from './durations';
import type {
  ApprovalScope,
  AttemptPolicy,
  AuthorizationBasis,
  DefiniteOutcome,
  DenialBasis,
  IntentScope,
  KeptOutput,
  MarkerState,
  OutcomeSource,
  ReviewReason,
  ReviewResolution,
  TaskFinding,
  UnknownOutcomeReason,
} from './events';
import type { Fingerprint } from './fingerprint-value';
import type { OperationClass } from './operation-class';
import type { ExecutionId } from './streams';

export const EXECUTION_STATUSES = [
  /** No stream yet. */
  'initial',
  'accepted',
  'awaiting_approval',
  'authorized',
  'denied',
  'cancelled',
  'dispatched',
  /**
   * The target gave a definite answer, whatever its status: an error answer (`outcome.outcome` `failed`) is still
   * `completed`, told with `isError`, for the target may have acted before it answered so.
   */
  'completed',
  /** Nothing was sent (the attempt's outcome has source `not_sent`): nothing reached the target. */
  'failed',
  'outcome_unknown',
  'needs_review',
  'delivered',
  'completed_result_not_delivered',
  'expired',
  /** A review resolved as abandoned: the gateway stops and the outcome stays as the operator found it. */
  'abandoned',
  /**
   * A review found the last attempt not executed. Nothing is sent on that alone: the agent's retry (or an operator's
   * resend) moves it back to `authorized` for the next attempt, under the same execution id and key.
   */
  'not_executed',
] as const;

export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/** Facts fixed at acceptance. */
export interface AcceptedFacts {
  readonly actor: string;
  readonly toolName: string;
  readonly fingerprint: Fingerprint;
  readonly operationClass: OperationClass;
  readonly intentScope: IntentScope;
  readonly windowEndsAt: IsoInstant | null;
  /** `null`: the whole correlation window. */
  readonly redeliveryGraceMs: number | null;
  readonly attemptPolicy: AttemptPolicy;
  readonly acceptedAt: IsoInstant;
  /** The channel whose dispatcher sends it (`http`, `ssh`, a plugin's). */
  readonly channel: string;
  readonly argumentsRef: string | null;
  readonly runId: string | null;
}

export interface ApprovalFacts {
  readonly decision: 'pending' | 'granted' | 'denied';
  readonly scope: ApprovalScope;
  readonly runId: string | null;
  readonly expiresAt: IsoInstant | null;
  readonly requestedBy: string;
  readonly requestedAt: IsoInstant;
  /** Who decided and why; `null` while pending. */
  readonly decidedBy: string | null;
  readonly reason: string;
}

export interface DispatchFacts {
  readonly attempt: number;
  readonly dispatcherId: string;
  readonly dispatchedAt: IsoInstant;
}

export interface OutcomeFacts {
  readonly attempt: number;
  /** With source `response`, `marker` or `review`: `failed` is an error answer; with `not_sent`: nothing was sent. */
  readonly outcome: DefiniteOutcome;
  /** `review` when an operator resolved an unknown outcome as completed. */
  readonly source: OutcomeSource | 'review';
  readonly targetStatus: number | null;
  readonly exitCode: number | null;
  readonly resultRef: string | null;
  readonly resultDigest: string | null;
  readonly observedAt: IsoInstant;
  /** With source `not_sent`: why nothing left. */
  readonly notSentReason?: string | null;
}

/** What the target last said of an attempt's progress. */
export interface AttemptProgressFacts {
  readonly attempt: number;
  readonly progress: number;
  readonly total: number | null;
  readonly message: string | null;
  readonly reportedAt: IsoInstant;
}

/** The task the target ran an attempt as (`AttemptTaskStarted`): the channel's reference to resume it by. */
export interface AttemptTaskFacts {
  readonly attempt: number;
  readonly task: Readonly<Record<string, unknown>>;
  readonly startedAt: IsoInstant;
}

/** What resuming an attempt's task found when it gave no outcome (`AttemptTaskChecked`). */
export interface TaskCheckEvidence {
  readonly attempt: number;
  readonly finding: TaskFinding;
  readonly reason: string;
  readonly checkedAt: IsoInstant;
}

export interface StatusQueryEvidence {
  readonly attempt: number;
  readonly preconditionHolds: boolean;
  readonly observedStatus: string | null;
  readonly queriedAt: IsoInstant;
}

export interface MarkerProbeEvidence {
  readonly attempt: number;
  readonly marker: MarkerState;
  readonly exitStatus: number | null;
  readonly probedAt: IsoInstant;
  readonly markerAttempt?: number | null;
  readonly failure?: string | null;
  readonly keptOutput?: KeptOutput | null;
}

export interface ReviewFacts {
  readonly attempt: number;
  readonly reason: ReviewReason;
  readonly requiredAt: IsoInstant;
  readonly resolution: ReviewResolution | null;
  readonly resolvedBy: string | null;
  readonly resolvedAt: IsoInstant | null;
  /**
   * An operator's resend of a `not_executed` resolution: who asked and when, and who confirmed it (an irreversible
   * call's second operator; `null` while it waits for one, and for the classes that need no second). `null`: none asked.
   */
  readonly resend: ResendFacts | null;
}

export interface ResendFacts {
  readonly requestedBy: string;
  readonly requestedAt: IsoInstant;
  readonly confirmedBy: string | null;
}

export interface DeliveryFacts {
  /** The latest delivery event decides: an earlier write is no proof the client read it. */
  readonly last: 'delivered' | 'failed';
  readonly lastAt: IsoInstant;
  /** The latest successful write, from which the redelivery grace runs. */
  readonly lastDeliveredAt: IsoInstant | null;
  readonly deliveries: number;
}

export interface ExecutionState {
  readonly status: ExecutionStatus;
  readonly executionId: ExecutionId | null;
  readonly accepted: AcceptedFacts | null;
  readonly approval: ApprovalFacts | null;
  readonly authorization: { readonly basis: AuthorizationBasis; readonly authorizedAt: IsoInstant } | null;
  readonly denial: { readonly basis: DenialBasis; readonly reason: string; readonly deniedAt: IsoInstant } | null;
  /** Number of Dispatched events so far; the current attempt's number. */
  readonly attempts: number;
  readonly firstDispatchedAt: IsoInstant | null;
  readonly lastDispatch: DispatchFacts | null;
  readonly outcome: OutcomeFacts | null;
  readonly unknownOutcome: {
    readonly attempt: number;
    readonly reason: UnknownOutcomeReason;
    readonly observedAt: IsoInstant;
  } | null;
  /** The latest progress the target reported for the current attempt (`AttemptProgressed`), `null` before any. */
  readonly attemptProgress: AttemptProgressFacts | null;
  /** The latest attempt's task at the target, when the target ran it as one. */
  readonly attemptTask: AttemptTaskFacts | null;
  readonly taskCheck: TaskCheckEvidence | null;
  readonly statusQuery: StatusQueryEvidence | null;
  readonly markerProbe: MarkerProbeEvidence | null;
  readonly review: ReviewFacts | null;
  readonly delivery: DeliveryFacts | null;
  readonly retriesAttached: number;
  /** CancellationRequested evidence (after dispatch, or a caller withdrawn while others wait); it changes nothing else. */
  readonly cancellationRequests: number;
  readonly cancelledAt: IsoInstant | null;
  readonly expiredAt: IsoInstant | null;
}

export function initialState(): ExecutionState {
  return {
    status: 'initial',
    executionId: null,
    accepted: null,
    approval: null,
    authorization: null,
    denial: null,
    attempts: 0,
    firstDispatchedAt: null,
    lastDispatch: null,
    outcome: null,
    unknownOutcome: null,
    attemptProgress: null,
    attemptTask: null,
    taskCheck: null,
    statusQuery: null,
    markerProbe: null,
    review: null,
    delivery: null,
    retriesAttached: 0,
    cancellationRequests: 0,
    cancelledAt: null,
    expiredAt: null,
  };
}

/**
 * States in which no attempt has been sent yet, so cancellation and expiry are still safe. `authorized` with
 * attempts > 0 (after a review found the earlier attempt not executed, and the agent retried or an operator asked
 * for a resend) is excluded from cancellation by the decider, because a Dispatched has been appended before.
 */
export const PRE_DISPATCH_STATUSES = ['accepted', 'awaiting_approval', 'authorized'] as const satisfies readonly ExecutionStatus[];

/** A side effect may be in flight or its outcome is unknown. Nothing may start a second execution of it. */
export const UNSETTLED_STATUSES = ['dispatched', 'outcome_unknown', 'needs_review'] as const satisfies readonly ExecutionStatus[];

/** States with a definite outcome a result can be delivered for. */
export const DEFINITE_OUTCOME_STATUSES = [
  'completed',
  'completed_result_not_delivered',
  'delivered',
  'failed',
] as const satisfies readonly ExecutionStatus[];

/** What the target reported of an attempt's progress, in the words the agent and `investigate` both use. */
export function progressWords(reported: Pick<AttemptProgressFacts, 'progress' | 'total' | 'message'>): string {
  const { progress, total, message } = reported;
  return `the target reports ${progress}${total === null ? '' : ` of ${total}`}${message === null ? '' : `: ${message}`}`;
}

/**
 * Whether the target's definite answer was an error (an HTTP 3xx, 4xx or 5xx, a non-zero exit status, an error of
 * the SQL server): the execution is `completed` and the answer is told with `isError`. A `failed` outcome with source
 * `not_sent` is no answer at all: nothing was sent.
 */
export function answeredWithError(outcome: Pick<OutcomeFacts, 'outcome' | 'source'> | null): boolean {
  return outcome !== null && outcome.outcome === 'failed' && outcome.source !== 'not_sent';
}

export function statusIn<const TStatuses extends readonly ExecutionStatus[]>(
  status: ExecutionStatus,
  statuses: TStatuses,
): status is TStatuses[number] {
  return (statuses as readonly ExecutionStatus[]).includes(status);
}
