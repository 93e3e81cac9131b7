/**
 * Commands to the execution decider, named imperatively. Each carries the execution id it targets and `now`
 * (ISO instant): the clock and every id arrive inside the command so `decide` stays deterministic.
 */
import type { IsoInstant } from './durations';
import type {
  AnswerTold,
  ApprovalScope,
  AttemptPolicy,
  AuthorizationBasis,
  CancellationTrigger,
  DefiniteOutcome,
  DenialBasis,
  IntentScope,
  KeptOutput,
  MarkerState,
  OutcomeSource,
  ProtocolCorrelation,
  RedactedCanonicalRecord,
  ReviewReason,
  ReviewResolution,
  TaskFinding,
  UnknownOutcomeReason,
} from './events';
import type { Fingerprint } from './fingerprint-value';
import type { OperationClass } from './operation-class';
import type { ExecutionId } from './streams';

interface CommandBase<TType extends string> {
  readonly type: TType;
  readonly executionId: ExecutionId;
  readonly now: IsoInstant;
}

export interface AcceptExecution extends CommandBase<'AcceptExecution'> {
  readonly record: RedactedCanonicalRecord;
  readonly fingerprint: Fingerprint;
  readonly operationClass: OperationClass;
  /** Must format to `record.intent_scope`. */
  readonly intentScope: IntentScope;
  /** The tool's correlation window; `null` means "until confirmed". The window ends at `now + correlationWindowMs`. */
  readonly correlationWindowMs: number | null;
  /** `null`: the whole correlation window. */
  readonly redeliveryGraceMs: number | null;
  readonly attemptPolicy: AttemptPolicy;
  readonly correlation: ProtocolCorrelation;
  /** Where the raw arguments are sealed; `null` when the call has none worth keeping. */
  readonly argumentsRef: string | null;
  /** The run the call belongs to, if any. */
  readonly runId?: string | null;
}

export interface AttachRetry extends CommandBase<'AttachRetry'> {
  readonly correlation: ProtocolCorrelation;
}

export interface RequestApproval extends CommandBase<'RequestApproval'> {
  readonly requestedBy: string;
  readonly reason: string;
  /** Default `execution`. A `run` request needs the execution's run. */
  readonly scope?: ApprovalScope;
  /** When an unanswered request times out; `null` or absent for never. */
  readonly expiresAt?: IsoInstant | null;
}

export interface GrantApproval extends CommandBase<'GrantApproval'> {
  readonly by: string;
  readonly reason: string;
}

export interface DenyApproval extends CommandBase<'DenyApproval'> {
  readonly by: string;
  readonly reason: string;
}

export interface AuthorizeExecution extends CommandBase<'AuthorizeExecution'> {
  readonly basis: AuthorizationBasis;
}

export interface DenyExecution extends CommandBase<'DenyExecution'> {
  readonly basis: DenialBasis;
  readonly reason: string;
}

/** Appended, and durable, before any byte leaves. The attempt number and idempotency key are derived. */
export interface RecordDispatch extends CommandBase<'RecordDispatch'> {
  readonly dispatcherId: string;
}

export interface ObserveOutcome extends CommandBase<'ObserveOutcome'> {
  readonly attempt: number;
  readonly outcome: DefiniteOutcome;
  readonly source: OutcomeSource;
  readonly targetStatus: number | null;
  readonly exitCode: number | null;
  readonly resultRef: string | null;
  readonly resultDigest: string | null;
  /** Required with source `not_sent`: why nothing left. */
  readonly notSentReason?: string;
}

export interface RecordUnknownOutcome extends CommandBase<'RecordUnknownOutcome'> {
  readonly attempt: number;
  readonly reason: UnknownOutcomeReason;
}

export interface RecordStatusQuery extends CommandBase<'RecordStatusQuery'> {
  readonly attempt: number;
  readonly preconditionHolds: boolean;
  readonly observedStatus: string | null;
}

export interface RecordMarkerProbe extends CommandBase<'RecordMarkerProbe'> {
  readonly attempt: number;
  readonly marker: MarkerState;
  readonly exitStatus: number | null;
  /** The attempt named in the marker file. */
  readonly markerAttempt?: number | null;
  /** Required with `probe_failed`. */
  readonly failure?: string;
  readonly keptOutput?: KeptOutput | null;
}

export interface RequireReview extends CommandBase<'RequireReview'> {
  readonly reason: ReviewReason;
}

export interface ResolveReview extends CommandBase<'ResolveReview'> {
  readonly resolution: ReviewResolution;
  readonly by: string;
  readonly reason: string;
  /**
   * With `not_executed` only: send it again now rather than on the agent's retry. An irreversible call needs it from
   * two operators: the first asks, another confirms (the same one twice is refused).
   */
  readonly resend?: boolean;
}

export interface RecordResultDelivered extends CommandBase<'RecordResultDelivered'> {
  readonly correlation: ProtocolCorrelation;
  readonly replayed: boolean;
  /** What proved receipt; required, because a written response alone proves nothing. */
  readonly evidence: string;
  /** What the delivered answer told, when it is known. */
  readonly told?: AnswerTold;
}

export interface RecordResultDeliveryFailed extends CommandBase<'RecordResultDeliveryFailed'> {
  readonly correlation: ProtocolCorrelation;
  readonly reason: string;
  /** What the answer told, when there was one. */
  readonly told?: AnswerTold;
}

/** How an answer's delivery settled, as the transport proved it (`now` is when it settled). */
export type AnswerSettlement =
  | { readonly kind: 'delivered'; readonly evidence: string }
  | { readonly kind: 'not_delivered'; readonly reason: string }
  | { readonly kind: 'unproven'; readonly reason?: string };

/** What the target said of the current attempt's progress; refused once that attempt's outcome is recorded. */
export interface RecordAttemptProgress extends CommandBase<'RecordAttemptProgress'> {
  readonly attempt: number;
  readonly progress: number;
  readonly total: number | null;
  readonly message: string | null;
}

/** Records the task the target runs the current attempt as (while it is dispatched): a reference to resume it by. */
export interface RecordAttemptTask extends CommandBase<'RecordAttemptTask'> {
  readonly attempt: number;
  readonly task: Readonly<Record<string, unknown>>;
}

/** Records what resuming the attempt's task found, when it did not give the outcome (after an unknown outcome). */
export interface RecordTaskCheck extends CommandBase<'RecordTaskCheck'> {
  readonly attempt: number;
  readonly finding: TaskFinding;
  readonly reason: string;
}

/**
 * Records an answer the gateway gave to a tools/call, once its delivery settled. The decider chooses the event: an
 * answer that carried a definite outcome, delivered or refused, is `ResultDelivered` / `ResultDeliveryFailed` (they
 * drive the delivery states); any other answer, and an unproven one, is `AnswerGiven`.
 */
export interface RecordAnswer extends CommandBase<'RecordAnswer'> {
  readonly correlation: ProtocolCorrelation;
  readonly told: AnswerTold;
  readonly delivery: AnswerSettlement;
}

/** Strict: refused once Dispatched has been appended. */
export interface CancelExecution extends CommandBase<'CancelExecution'> {
  readonly trigger: CancellationTrigger;
  readonly correlation: ProtocolCorrelation;
}

/**
 * What the gateway sends for every client cancel. A cancel withdraws its own caller: before Dispatched, and only
 * when no other caller still waits for the execution, it cancels; otherwise it is recorded as evidence and changes
 * nothing.
 */
export interface RequestCancellation extends CommandBase<'RequestCancellation'> {
  readonly trigger: CancellationTrigger;
  readonly correlation: ProtocolCorrelation;
  /**
   * Whether another caller (an attached retry, on any connection) still waits for this execution, looked up by the
   * front when the cancel arrived. Absent means none.
   */
  readonly otherCallersWaiting?: boolean;
}

export type ExpireExecution = CommandBase<'ExpireExecution'>;

export type ExecutionCommand =
  | AcceptExecution
  | AttachRetry
  | RequestApproval
  | GrantApproval
  | DenyApproval
  | AuthorizeExecution
  | DenyExecution
  | RecordDispatch
  | ObserveOutcome
  | RecordUnknownOutcome
  | RecordStatusQuery
  | RecordMarkerProbe
  | RequireReview
  | ResolveReview
  | RecordResultDelivered
  | RecordResultDeliveryFailed
  | RecordAttemptProgress
  | RecordAttemptTask
  | RecordTaskCheck
  | RecordAnswer
  | CancelExecution
  | RequestCancellation
  | ExpireExecution;

export type ExecutionCommandType = ExecutionCommand['type'];

const COMMAND_TYPE_TABLE: { readonly [TType in ExecutionCommandType]: true } = {
  AcceptExecution: true,
  AttachRetry: true,
  RequestApproval: true,
  GrantApproval: true,
  DenyApproval: true,
  AuthorizeExecution: true,
  DenyExecution: true,
  RecordDispatch: true,
  ObserveOutcome: true,
  RecordUnknownOutcome: true,
  RecordStatusQuery: true,
  RecordMarkerProbe: true,
  RequireReview: true,
  ResolveReview: true,
  RecordResultDelivered: true,
  RecordResultDeliveryFailed: true,
  RecordAttemptProgress: true,
  RecordAttemptTask: true,
  RecordTaskCheck: true,
  RecordAnswer: true,
  CancelExecution: true,
  RequestCancellation: true,
  ExpireExecution: true,
};

/** Every command type; derived from a table keyed by the union, so none is missing. */
export const EXECUTION_COMMAND_TYPES = Object.keys(COMMAND_TYPE_TABLE) as readonly ExecutionCommandType[];
