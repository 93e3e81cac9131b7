/**
 * The events of an execution stream (docs/design.md section 4), as a discriminated union on `type`. Each event's payload
 * (`data`) is versioned by a literal `schemaVersion`; a payload change adds a version and an upcaster, never an
 * edit in place. Metadata (ids, actor, clock, hash chain) is added by the caller that appends, not by `decide`.
 */
import type { IsoInstant } from './durations';
import type { ExecutionStatus } from './execution-state';
import type { Fingerprint } from './fingerprint-value';
import type { OperationClass } from './operation-class';
import type { ExecutionId } from './streams';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

/**
 * The canonical operation record (docs/design.md section 2) after redaction: secret arguments already replaced by their
 * HMAC. Keys are spelled exactly as in the canonical JSON, so the recorded value can be re-fingerprinted during
 * an audit without a mapping step.
 */
export interface RedactedCanonicalRecord {
  readonly actor: string;
  readonly tool: string;
  /** `http`, `ssh` or a plugin channel's name. */
  readonly channel: string;
  readonly target: string;
  /** The contract's credential reference; `null` when the tool uses none (the key is always present). */
  readonly credential_ref: string | null;
  /** HTTP method for HTTP targets; absent for channels without one. */
  readonly method?: string;
  readonly arguments: JsonObject;
  /** The formatted intent scope (`key:<value>`, `run:<id>` or `actor`), see `formatIntentScope`. */
  readonly intent_scope: string;
}

/** docs/design.md section 3, strongest first. */
export type IntentScope =
  /** A durable key: the caller's `_meta["io.oncegate/idempotency-key"]` or the argument the contract names. */
  | { readonly kind: 'key'; readonly key: string; readonly source: 'caller' | 'contract' }
  /** The agent run, declared by the client or one per MCP session. */
  | { readonly kind: 'run'; readonly runId: string }
  /** Neither: the actor alone, kept apart by the per-tool window and the matchable states. */
  | { readonly kind: 'actor' };

export function formatIntentScope(scope: IntentScope): string {
  switch (scope.kind) {
    case 'key':
      return `key:${scope.key}`;
    case 'run':
      return `run:${scope.runId}`;
    case 'actor':
      return 'actor';
    default:
      return assertNever(scope);
  }
}

/** Protocol correlation is evidence only, never identity (docs/design.md section 1). */
export interface ProtocolCorrelation {
  readonly jsonRpcId?: string | number;
  readonly sessionId?: string;
  readonly sseEventId?: string;
  /** e.g. `streamable-http`, `stdio`. */
  readonly transport?: string;
}

/** How many times and how long the dispatcher may try, fixed at acceptance from the tool contract. */
export interface AttemptPolicy {
  /** Upper bound on Dispatched events recovery may produce on its own (a review resolution may exceed it). */
  readonly maxAttempts: number;
  /** After this long without an outcome, a dispatched attempt is declared unknown. */
  readonly attemptTimeoutMs: number;
  /**
   * Remote commands only: the contract promises the durable marker is written before any work starts, so an
   * absent marker proves nothing ran.
   */
  readonly markerBeforeWork: boolean;
}

export type AuthorizationBasis = 'session_grant' | 'per_use_approval' | 'policy';

export type DenialBasis =
  | 'vault_locked'
  | 'policy'
  | 'approval_denied'
  | 'target_unresolved'
  | 'credential_unresolved'
  | 'approval_timeout'
  /** A pending approval was cancelled by a vault unlock (a lock denies with `vault_locked`). */
  | 'approval_invalidated';

/** What an approval decides: this execution alone, or a session grant for the run it belongs to. */
export type ApprovalScope = 'execution' | 'run';

/** What a matching retry was given (docs/design.md sections 5 and 9). */
export type RetryReturn =
  | 'continued'
  | 'pending'
  | 'denial'
  | 'stored_result'
  | 'failure'
  | 'unknown'
  | 'review_hold'
  | 'recovering'
  | 'abandoned';

/**
 * What an attempt came to, as recorded in `OutcomeObserved`. With source `response` or `marker` the target gave a
 * definite answer and the execution is `completed` either way: `succeeded` when the answer is not an error, `failed`
 * when it is one (an HTTP 3xx, 4xx or 5xx other than 502/504, a non-zero exit status, an error the SQL server
 * answered) — the answer is then told with `isError`, and the target may still have acted. With source `not_sent`
 * it is always `failed`: nothing was sent, and the execution is `failed` (docs/design.md section 9).
 */
export type DefiniteOutcome = 'succeeded' | 'failed';

/**
 * Where a definite outcome came from: the target's response; a completed marker found during recovery; the task the
 * target ran the attempt as, resumed during recovery (`task`: its result, from the target itself); or
 * `not_sent`: the dispatcher knows for certain that nothing left (the connection was refused, the host's key was
 * not the pinned one, the host refused the command) — a failure in which nothing ran.
 */
export type OutcomeSource = 'response' | 'marker' | 'task' | 'not_sent';

/** Why an attempt's outcome is unknown: what broke between sending and hearing the answer. */
export type UnknownOutcomeReason =
  /** The request was handed to the OS and no response arrived in time. */
  | 'timeout_after_send'
  | 'connection_reset'
  | 'ssh_connection_dropped'
  /** The process that sent the attempt is gone (its liveness lease expired or was never held) with no report. */
  | 'dispatcher_lost'
  /** The attempt outlived its timeout and the reporting margin with no report, though its dispatcher looks alive. */
  | 'attempt_deadline_passed'
  /**
   * Remote commands: the host refused this attempt because another attempt of the execution had already claimed
   * it (the marker protocol's claim). This attempt ran nothing; the other attempt's marker holds the outcome.
   */
  | 'claimed_by_another_attempt'
  /**
   * This attempt sent nothing, but an earlier attempt's outcome is still unknown (no review vouched that it did
   * nothing): the execution cannot be called a failure on this attempt's word.
   */
  | 'not_sent_after_unknown';

/** What the probe found on the host; `probe_failed`: the host could not be asked, so nothing was found out. */
export type MarkerState = 'completed' | 'started' | 'absent' | 'probe_failed';

export type ReviewReason =
  | 'irreversible_outcome_unknown'
  | 'precondition_no_longer_holds'
  | 'marker_started'
  | 'marker_absent_without_marker_before_work'
  | 'marker_completed_without_exit_status'
  /** The marker could not be read (host key mismatch, host unreachable, no key): nothing is known. */
  | 'marker_probe_failed'
  | 'attempt_limit_reached'
  | 'operator_requested';

export type ReviewResolution =
  /** The operator confirmed the effect happened. */
  | 'completed'
  /**
   * The operator confirmed nothing happened. Nothing is sent on that alone: the agent's retry sends the next attempt
   * with the same key, or an operator asks for a resend (`resend`).
   */
  | 'not_executed'
  /** The gateway stops here; the outcome stays as the operator found it. */
  | 'abandoned';

export type CancellationTrigger =
  /** `notifications/cancelled`. */
  | 'client_notification'
  /** Under the 2026-07-28 revision a closed response stream also cancels. */
  | 'response_stream_closed'
  /** `tasks/cancel` of the tasks extension (`io.modelcontextprotocol/tasks`), whose task is the execution. */
  | 'task_cancel';

export interface ExecutionAcceptedData {
  readonly executionId: ExecutionId;
  readonly record: RedactedCanonicalRecord;
  readonly fingerprint: Fingerprint;
  readonly operationClass: OperationClass;
  readonly intentScope: IntentScope;
  readonly toolName: string;
  /** `null` when the window is "until confirmed". */
  readonly windowEndsAt: IsoInstant | null;
  /**
   * How long after a proven delivery a matching call still gets the stored result; 0 disables it. `null`: the
   * whole correlation window (conditional writes, irreversible calls, remote commands).
   */
  readonly redeliveryGraceMs: number | null;
  readonly attemptPolicy: AttemptPolicy;
  readonly correlation: ProtocolCorrelation;
  readonly acceptedAt: IsoInstant;
  /**
   * Reference to the call's raw arguments, sealed (encrypted) outside the journal: the record above holds
   * secret arguments only as HMACs, and the dispatcher needs the real values to send the request.
   */
  readonly argumentsRef: string | null;
  /**
   * The run the call belongs to (declared by the client, or one per MCP session); `null` when there is none.
   * Absent in events written before runs were recorded, read as `null`.
   */
  readonly runId?: string | null;
}

export interface RetryAttachedData {
  readonly correlation: ProtocolCorrelation;
  readonly returned: RetryReturn;
  /** The stored result was handed out again inside the redelivery grace. */
  readonly replayed: boolean;
  readonly attachedAt: IsoInstant;
}

export interface ApprovalRequestedData {
  /** Who asks, e.g. `policy:payments-over-limit`. */
  readonly requestedBy: string;
  readonly reason: string;
  readonly requestedAt: IsoInstant;
  /** `run`: granting it grants the run a session grant. Absent in older events, read as `execution`. */
  readonly scope?: ApprovalScope;
  readonly runId?: string | null;
  /** When an unanswered request is denied (`approval_timeout`); `null` for never. */
  readonly expiresAt?: IsoInstant | null;
}

export interface ApprovalDecidedData {
  /** The human or policy that decided, e.g. `user:alice`. */
  readonly by: string;
  readonly reason: string;
  readonly decidedAt: IsoInstant;
}

export interface ExecutionAuthorizedData {
  readonly basis: AuthorizationBasis;
  readonly authorizedAt: IsoInstant;
}

export interface ExecutionDeniedData {
  readonly basis: DenialBasis;
  readonly reason: string;
  readonly deniedAt: IsoInstant;
}

export interface DispatchedData {
  /** 1 for the first Dispatched of the execution, +1 for each after it. */
  readonly attempt: number;
  readonly dispatcherId: string;
  /** Always the execution id: every attempt of an execution carries the same key. */
  readonly idempotencyKey: ExecutionId;
  readonly dispatchedAt: IsoInstant;
}

export interface OutcomeObservedData {
  readonly attempt: number;
  /** `failed` with source `response` or `marker`: an error answer (the execution is `completed`); with `not_sent`: nothing was sent. */
  readonly outcome: DefiniteOutcome;
  readonly source: OutcomeSource;
  /** HTTP status of the target, when the channel has one. */
  readonly targetStatus: number | null;
  /** Exit code of a remote command, when the channel has one. */
  readonly exitCode: number | null;
  /** Reference to the encrypted result body; the body never enters an event. */
  readonly resultRef: string | null;
  readonly resultDigest: string | null;
  readonly observedAt: IsoInstant;
  /**
   * With source `not_sent`: why nothing left, e.g. `host key mismatch: …` (hosts and fingerprints, never a
   * secret). Absent in older events and for other sources.
   */
  readonly notSentReason?: string | null;
}

/**
 * What the target said of an attempt's progress while the attempt was in flight (an upstream MCP server's
 * `notifications/progress`), as its channel reported it; it changes nothing in the execution's state but what a
 * waiting agent is told. A channel reports at most one a second per attempt, the latest; the message has its secrets
 * hidden and is cut to 200 characters.
 */
export interface AttemptProgressedData {
  readonly attempt: number;
  /** How far the work is, as the target counts it (it only grows within an attempt). */
  readonly progress: number;
  /** Out of how much, when the target said. */
  readonly total: number | null;
  /** What the target said it is doing, when it said. */
  readonly message: string | null;
  readonly reportedAt: IsoInstant;
}

/**
 * The target runs the attempt as a task of its own (an upstream MCP server's task) and gave the channel a reference to
 * it, recorded as soon as the target answered with it: after an unknown outcome, recovery resumes the task by this
 * reference to learn its outcome from the target, whatever the class (docs/design.md section 6). The reference is the
 * channel's, a JSON object of at most 2 KiB that holds no secret.
 */
export interface AttemptTaskStartedData {
  readonly attempt: number;
  readonly task: Readonly<Record<string, unknown>>;
  readonly startedAt: IsoInstant;
}

/** What resuming an attempt's task found when it did not give the outcome; the class's rule then decides. */
export type TaskFinding =
  /** The target still works on it (past the attempt's response timeout). */
  | 'working'
  /** The target does not know the task (expired, or it belonged to a session that is gone). */
  | 'lost'
  /** The target could not be asked. */
  | 'unreachable';

export interface AttemptTaskCheckedData {
  readonly attempt: number;
  readonly finding: TaskFinding;
  /** What the channel saw, in words (no secret), at most 200 characters. */
  readonly reason: string;
  readonly checkedAt: IsoInstant;
}

export interface OutcomeUnknownData {
  readonly attempt: number;
  readonly reason: UnknownOutcomeReason;
  readonly observedAt: IsoInstant;
}

export interface StatusQueriedData {
  readonly attempt: number;
  readonly preconditionHolds: boolean;
  /** What the contract's status query saw, redacted (e.g. `version=41`). */
  readonly observedStatus: string | null;
  readonly queriedAt: IsoInstant;
}

export interface MarkerProbedData {
  readonly attempt: number;
  readonly marker: MarkerState;
  /** Recorded by the marker protocol when the command finished; `null` when absent or not yet written. */
  readonly exitStatus: number | null;
  readonly probedAt: IsoInstant;
  /**
   * The attempt that wrote the marker found (it may be another than `attempt`); `null` when the file does not say.
   * Absent in older events.
   */
  readonly markerAttempt?: number | null;
  /** With `probe_failed`: why the host could not be asked (host key mismatch, connection refused, vault locked). */
  readonly failure?: string | null;
  /**
   * With `completed`: the command's output files still on the host, which did not come back over the lost
   * connection; `host` is `user@host:port`. Absent (or `null`) when none is kept.
   */
  readonly keptOutput?: KeptOutput | null;
}

/** Output of a remote command left on its host. */
export interface KeptOutput {
  readonly host: string;
  readonly paths: readonly string[];
}

export interface ReviewRequiredData {
  readonly attempt: number;
  readonly reason: ReviewReason;
  readonly requiredAt: IsoInstant;
}

export interface ReviewResolvedData {
  readonly resolution: ReviewResolution;
  readonly by: string;
  readonly reason: string;
  readonly resolvedAt: IsoInstant;
  /**
   * With `not_executed`: send it again now, without the agent's retry, under the same execution id and key. For an
   * irreversible call the first such resolution only asks, and a second one by another operator sends it. Absent
   * in older events and when not asked, read as false: a resolution alone sends nothing.
   */
  readonly resend?: boolean;
}

export interface ResultDeliveredData {
  /** The transport the result was written to. */
  readonly correlation: ProtocolCorrelation;
  readonly replayed: boolean;
  readonly deliveredAt: IsoInstant;
  /**
   * What proved the client received it, e.g. a later request on the same session or a `Last-Event-ID` at or
   * past the response's event (a socket write is no proof). Absent in events recorded before it was required.
   */
  readonly evidence?: string;
  /** What the answer that was delivered told the agent. Absent in events recorded before answers were. */
  readonly told?: AnswerTold;
}

export interface ResultDeliveryFailedData {
  /** The call whose answer it was; empty when no caller was waiting (result delivery found nobody to answer). */
  readonly correlation: ProtocolCorrelation;
  /** Transport detail, e.g. `response stream closed before write`. */
  readonly reason: string;
  readonly failedAt: IsoInstant;
  /**
   * What the answer that could not be handed over told; absent when there was no answer (nobody was waiting) and in
   * events recorded before answers were.
   */
  readonly told?: AnswerTold;
}

/**
 * What one answer to a tools/call told the agent (docs/design.md section 9): the fields of its
 * `structuredContent.execution`, and when it was given.
 */
export interface AnswerTold {
  /** The execution state the answer carried (`structuredContent.execution.state`). */
  readonly state: ExecutionStatus;
  /** The answer was an error (`isError`): a denial, a failure in which nothing was sent, an error answer of the target, … */
  readonly isError: boolean;
  /** The attempt count the answer carried. */
  readonly attempts: number;
  /** The call matched this execution rather than creating it. */
  readonly attached: boolean;
  /** The stored result was handed out again inside the redelivery grace. */
  readonly replayed: boolean;
  /** When the answer was made, just before it was handed to the transport. */
  readonly givenAt: IsoInstant;
  /**
   * How it reached the agent when not as the tools/call's own result (the tasks extension): `task` — the tools/call
   * was answered with a task still working, in this state; `task_result` — a `tasks/get` handed out the task's result
   * (the correlation is that request's). Absent: the tools/call's own result.
   */
  readonly via?: AnswerVia;
}

export type AnswerVia = 'task' | 'task_result';

/**
 * What is known of an answer's delivery: `delivered` — evidence shows the client received it; `not_delivered` — it
 * could not be handed over, or the client gave up on it; `unproven` — nothing showed either way before the connection
 * ended (or before the gateway stopped watching it).
 */
export type AnswerDelivery = 'delivered' | 'not_delivered' | 'unproven';

/**
 * An answer the gateway gave to a tools/call (the first call or a retry, on any transport), recorded once its
 * delivery settled. It changes nothing in the execution's state. An answer that carried a definite outcome and whose
 * delivery was proven or refused is recorded as `ResultDelivered` / `ResultDeliveryFailed` with `told` instead, which
 * drive the state `delivered` / `completed_result_not_delivered`; every other answer is an `AnswerGiven`.
 */
export interface AnswerGivenData {
  /** The call it answered: its JSON-RPC id, session and transport. */
  readonly correlation: ProtocolCorrelation;
  readonly told: AnswerTold;
  readonly delivery: AnswerDelivery;
  /** With `delivered`: what proved receipt (a later message on the same session, a `Last-Event-ID` past it). */
  readonly evidence?: string;
  /** With `not_delivered`: why it was not; with `unproven`: why nothing could show it (the connection ended, …). */
  readonly reason?: string;
  /** When its delivery settled. */
  readonly settledAt: IsoInstant;
}

export interface ExecutionCancelledData {
  readonly trigger: CancellationTrigger;
  readonly correlation: ProtocolCorrelation;
  readonly cancelledAt: IsoInstant;
}

export interface CancellationRequestedData {
  readonly trigger: CancellationTrigger;
  readonly correlation: ProtocolCorrelation;
  readonly requestedAt: IsoInstant;
}

export interface ExecutionExpiredData {
  readonly windowEndedAt: IsoInstant;
  readonly expiredAt: IsoInstant;
}

/** One event: its type, the version of its payload, and the payload. */
export interface VersionedEvent<TType extends string, TVersion extends number, TData> {
  readonly type: TType;
  readonly schemaVersion: TVersion;
  readonly data: TData;
}

export type ExecutionAccepted = VersionedEvent<'ExecutionAccepted', 1, ExecutionAcceptedData>;
export type RetryAttached = VersionedEvent<'RetryAttached', 1, RetryAttachedData>;
export type ApprovalRequested = VersionedEvent<'ApprovalRequested', 1, ApprovalRequestedData>;
export type ApprovalGranted = VersionedEvent<'ApprovalGranted', 1, ApprovalDecidedData>;
export type ApprovalDenied = VersionedEvent<'ApprovalDenied', 1, ApprovalDecidedData>;
export type ExecutionAuthorized = VersionedEvent<'ExecutionAuthorized', 1, ExecutionAuthorizedData>;
export type ExecutionDenied = VersionedEvent<'ExecutionDenied', 1, ExecutionDeniedData>;
export type Dispatched = VersionedEvent<'Dispatched', 1, DispatchedData>;
export type OutcomeObserved = VersionedEvent<'OutcomeObserved', 1, OutcomeObservedData>;
export type AttemptProgressed = VersionedEvent<'AttemptProgressed', 1, AttemptProgressedData>;
export type AttemptTaskStarted = VersionedEvent<'AttemptTaskStarted', 1, AttemptTaskStartedData>;
export type AttemptTaskChecked = VersionedEvent<'AttemptTaskChecked', 1, AttemptTaskCheckedData>;
export type OutcomeUnknown = VersionedEvent<'OutcomeUnknown', 1, OutcomeUnknownData>;
export type StatusQueried = VersionedEvent<'StatusQueried', 1, StatusQueriedData>;
export type MarkerProbed = VersionedEvent<'MarkerProbed', 1, MarkerProbedData>;
export type ReviewRequired = VersionedEvent<'ReviewRequired', 1, ReviewRequiredData>;
export type ReviewResolved = VersionedEvent<'ReviewResolved', 1, ReviewResolvedData>;
export type ResultDelivered = VersionedEvent<'ResultDelivered', 1, ResultDeliveredData>;
export type ResultDeliveryFailed = VersionedEvent<'ResultDeliveryFailed', 1, ResultDeliveryFailedData>;
export type AnswerGiven = VersionedEvent<'AnswerGiven', 1, AnswerGivenData>;
export type ExecutionCancelled = VersionedEvent<'ExecutionCancelled', 1, ExecutionCancelledData>;
export type CancellationRequested = VersionedEvent<'CancellationRequested', 1, CancellationRequestedData>;
export type ExecutionExpired = VersionedEvent<'ExecutionExpired', 1, ExecutionExpiredData>;

export type ExecutionEvent =
  | ExecutionAccepted
  | RetryAttached
  | ApprovalRequested
  | ApprovalGranted
  | ApprovalDenied
  | ExecutionAuthorized
  | ExecutionDenied
  | Dispatched
  | AttemptProgressed
  | AttemptTaskStarted
  | OutcomeObserved
  | OutcomeUnknown
  | AttemptTaskChecked
  | StatusQueried
  | MarkerProbed
  | ReviewRequired
  | ReviewResolved
  | ResultDelivered
  | ResultDeliveryFailed
  | AnswerGiven
  | ExecutionCancelled
  | CancellationRequested
  | ExecutionExpired;

export type ExecutionEventType = ExecutionEvent['type'];

export type ExecutionEventOfType<TType extends ExecutionEventType> = Extract<ExecutionEvent, { type: TType }>;

/** The current payload version of every event type; the journal writes it into the metadata too. */
export const EXECUTION_EVENT_SCHEMA_VERSIONS: {
  readonly [TType in ExecutionEventType]: ExecutionEventOfType<TType>['schemaVersion'];
} = {
  ExecutionAccepted: 1,
  RetryAttached: 1,
  ApprovalRequested: 1,
  ApprovalGranted: 1,
  ApprovalDenied: 1,
  ExecutionAuthorized: 1,
  ExecutionDenied: 1,
  Dispatched: 1,
  AttemptProgressed: 1,
  AttemptTaskStarted: 1,
  OutcomeObserved: 1,
  OutcomeUnknown: 1,
  AttemptTaskChecked: 1,
  StatusQueried: 1,
  MarkerProbed: 1,
  ReviewRequired: 1,
  ReviewResolved: 1,
  ResultDelivered: 1,
  ResultDeliveryFailed: 1,
  AnswerGiven: 1,
  ExecutionCancelled: 1,
  CancellationRequested: 1,
  ExecutionExpired: 1,
};

/** Every event type, in the order of docs/design.md section 4. Derived from the version table, so none is missing. */
export const EXECUTION_EVENT_TYPES = Object.keys(EXECUTION_EVENT_SCHEMA_VERSIONS) as readonly ExecutionEventType[];

export function isExecutionEventType(value: unknown): value is ExecutionEventType {
  return typeof value === 'string' && Object.hasOwn(EXECUTION_EVENT_SCHEMA_VERSIONS, value);
}

/** Builds an event of the current schema version. */
export function executionEvent<TType extends ExecutionEventType>(
  type: TType,
  data: ExecutionEventOfType<TType>['data'],
): ExecutionEventOfType<TType> {
  // The version table is keyed by the same union, so the assembled object is exactly ExecutionEventOfType<TType>.
  return { type, schemaVersion: EXECUTION_EVENT_SCHEMA_VERSIONS[type], data } as ExecutionEventOfType<TType>;
}

/**
 * Metadata every appended event carries (docs/design.md section 4). `prev` and `hash` form the hash chain of section 8
 * and are filled in by the journal when it appends.
 */
export interface EventMetadata {
  /** UUIDv7, see `isUuidV7`. */
  readonly eventId: string;
  readonly executionId: ExecutionId;
  /** The event or request that caused this one; `null` for the first event of a request. */
  readonly causationId: string | null;
  readonly correlation: ProtocolCorrelation;
  /** The authenticated principal on whose behalf it was appended, or the service (`service:dispatcher-http`). */
  readonly actor: string;
  readonly recordedAt: IsoInstant;
  readonly schemaVersion: number;
  /** The W3C trace context of the span that appended it, when tracing is on (docs/operations.md). */
  readonly traceparent?: string;
  readonly prev?: string;
  readonly hash?: string;
}

export type RecordedExecutionEvent<TEvent extends ExecutionEvent = ExecutionEvent> = TEvent & {
  readonly metadata: EventMetadata;
};

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A lower-case RFC 9562 version-7 UUID. */
export function isUuidV7(value: unknown): value is string {
  return typeof value === 'string' && UUID_V7.test(value);
}

function assertNever(value: never): never {
  throw new TypeError(`unexpected value ${JSON.stringify(value)}`);
}
