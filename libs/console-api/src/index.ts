/**
 * The JSON the gateway answers to the people who decide: the console's API (`/console/api`, served by
 * libs/service-gateway/src/front/console-api.ts) and the approvals API (`/approvals`, approvals-api.ts). The server checks
 * every answer it writes against these shapes and the browser console reads them through them, so a change to an
 * answer is a type error on both sides. Types only: the console's bundle takes nothing from here at run time.
 *
 * Instants are ISO-8601 strings, execution ids `ex_<ULID>`. The investigation's facts are described only where the
 * console reads them; everything else is described whole.
 */

/** A JSON value as the server writes it: secret arguments are HMACs, never values. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

// ---------------------------------------------------------------------------------------------------------------
// Errors: every answer other than 2xx.

/** The `code` of a console API error. */
export type ConsoleErrorCode =
  | 'unauthorized'
  | 'csrf_required'
  | 'invalid_json'
  | 'invalid_reason'
  | 'invalid_execution_id'
  /** Search parameters that cannot be read: a decision-history search (an unknown decision, a time not ISO-8601), an executions filter the index cannot answer (a state the domain does not name, …). */
  | 'invalid_query'
  | 'not_found'
  | 'not_pending'
  | 'not_held'
  | 'too_large'
  | 'unsupported_media_type'
  | 'method_not_allowed'
  /** The identity provider could not be asked about the session's access token. */
  | 'unavailable'
  | 'not_built'
  | 'internal';

/** The `code` of an approvals API error. */
export type ApprovalsApiErrorCode =
  | 'unauthorized'
  /** An access token that is valid but does not make its holder an approver. */
  | 'forbidden'
  /** The identity provider could not be asked about an access token. */
  | 'unavailable'
  | 'invalid_json'
  | 'invalid_reason'
  | 'invalid_execution_id'
  | 'not_found'
  | 'not_pending'
  | 'too_large'
  | 'method_not_allowed'
  | 'internal';

/** `{"error": {"code", "message"}}`, with the execution's state on a 409. */
export interface ErrorAnswer<Code extends string = ConsoleErrorCode | ApprovalsApiErrorCode> {
  readonly error: {
    readonly code: Code;
    readonly message: string;
    /** For 409 (`not_pending`, `not_held`): the execution's state. */
    readonly state?: string;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The console's session: `POST /console/api/session` signs in, `GET` says who is signed in (204 without a live
// session, so the sign-in page loads without an error), `DELETE` signs out (204).

export interface SignInRequest {
  /** An approver token, or an identity provider's access token that marks an approver. */
  readonly token: string;
}

export interface SessionAnswer {
  /** `approver:<name>`. */
  readonly actor: string;
  /** Sent back in `x-oncegate-csrf` with every decision and the sign-out. */
  readonly csrfToken: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Approvals.

export type ApprovalDecision = 'approve' | 'deny';

/** The body of `POST …/approvals/<execution-id>/approve` and `/deny`. */
export interface DecisionRequest {
  /** At most 1000 characters; recorded in the journal for good. */
  readonly reason: string;
}

/** One line of the queue (`GET /approvals`). */
export interface PendingApproval {
  readonly executionId: string;
  readonly actor: string;
  readonly tool: string;
  readonly runId: string | null;
  readonly scope: 'execution' | 'run';
  readonly requestedBy: string;
  readonly requestedAt: string;
  readonly reason: string;
  readonly expiresAt: string | null;
  /** Later calls of the same intent attached to this request (they never ask again). */
  readonly retriesAttached: number;
}

/** `GET /approvals`: the pending requests, oldest first. */
export interface PendingApprovalsAnswer {
  readonly approvals: readonly PendingApproval[];
}

/** Where the call goes, from the recorded target and the tool's contract. */
export interface ApprovalTarget {
  readonly name: string;
  /** HTTP method; `null` for channels without one. */
  readonly method: string | null;
  /** The contract's request URL template (HTTP); `null` otherwise. */
  readonly url: string | null;
  /** `user@host:port` of an SSH tool; `null` otherwise. */
  readonly sshHost: string | null;
  /** The command of an SSH tool, as its contract's argv templates; `null` otherwise. */
  readonly argv: readonly string[] | null;
  /** False when the gateway's contract file no longer declares the tool (the fields above are then unknown). */
  readonly inContract: boolean;
}

export interface ApprovalRequest {
  readonly scope: 'execution' | 'run';
  /** What granting does, said plainly. */
  readonly grants: string;
  readonly requestedBy: string;
  readonly requestedAt: string;
  readonly reason: string;
  readonly expiresAt: string | null;
  /** `closed`: nobody decided and the execution moved on (timed out, the vault locked, cancelled). */
  readonly decision: 'pending' | 'granted' | 'denied' | 'closed';
  readonly decidedBy: string | null;
  readonly decidedAt: string | null;
  readonly decisionReason: string | null;
}

/** A later call that matched the execution and was attached to it. */
export interface AttachedCall {
  readonly correlation: {
    readonly jsonRpcId?: string | number;
    readonly sessionId?: string;
    readonly sseEventId?: string;
    readonly transport?: string;
  };
  /** What the retry was given (`pending` while the approval waits). */
  readonly returned: string;
  readonly attachedAt: string;
}

/** The redacted canonical operation record, as accepted (keys as in the canonical JSON). */
export interface OperationRecord {
  readonly actor: string;
  readonly tool: string;
  readonly channel: string;
  readonly target: string;
  readonly credential_ref: string | null;
  /** HTTP method for HTTP targets; absent for channels without one. */
  readonly method?: string;
  readonly arguments: JsonObject;
  readonly intent_scope: string;
}

/** Everything an approver needs to decide one request (`GET …/approvals/<execution-id>`, and a decision's answer). */
export interface ApprovalView {
  readonly executionId: string;
  /** The execution's state; it stays `awaiting_approval` after a decision until authorization records its verdict. */
  readonly state: string;
  /** The approval's state in one phrase: `pending`, `granted by … at …`, `denied: approval_timeout at … (…)`. */
  readonly summary: string;
  readonly actor: string;
  readonly runId: string | null;
  readonly tool: string;
  readonly channel: string;
  readonly operationClass: string;
  readonly fingerprint: string;
  readonly intentScope: string;
  readonly acceptedAt: string;
  readonly target: ApprovalTarget;
  readonly arguments: JsonObject;
  readonly approval: ApprovalRequest;
  readonly attachedCalls: readonly AttachedCall[];
  readonly record: OperationRecord;
}

/** `GET /console/api/approvals`: every pending request, each shown whole. */
export interface ApprovalsAnswer {
  readonly approvals: readonly ApprovalView[];
}

// ---------------------------------------------------------------------------------------------------------------
// Reviews.

export type ReviewResolution = 'completed' | 'not_executed' | 'abandoned';

/** The body of `POST /console/api/reviews/<execution-id>/resolve`. */
export interface ResolutionRequest {
  readonly resolution: ReviewResolution;
  /** At most 1000 characters; recorded in the journal for good. */
  readonly reason: string;
  /**
   * With `not_executed`: send it again now instead of when the agent retries. An irreversible call needs two
   * operators: the first asks, another confirms with the same resolution. Default false: nothing is sent.
   */
  readonly resend?: boolean;
}

/** One recorded event of the execution, with what it says in one line. */
export interface ReviewEvent {
  readonly revision: number;
  readonly type: string;
  readonly recordedAt: string;
  readonly actor: string;
  readonly detail: string;
}

/** Everything an operator needs to resolve one held execution (also after it was resolved). */
export interface ReviewView {
  readonly executionId: string;
  readonly state: string;
  readonly attempts: number;
  readonly firstDispatchedAt: string | null;
  readonly targetStatus: number | null;
  readonly exitCode: number | null;
  /** The target's definite answer was an error (the state is completed). */
  readonly errorAnswer: boolean;
  readonly resultRef: string | null;
  readonly denialBasis: string | null;
  readonly reviewReason: string | null;
  readonly review: {
    readonly attempt: number;
    readonly reason: string;
    readonly requiredAt: string;
    readonly resolution: ReviewResolution | null;
    readonly resolvedBy: string | null;
    readonly resolvedAt: string | null;
    /** A resend asked after a not_executed resolution; `confirmedBy` is an irreversible call's second operator (`null` while it waits). */
    readonly resend: { readonly requestedBy: string; readonly requestedAt: string; readonly confirmedBy: string | null } | null;
  } | null;
  /** Evidence recovery gathered for the current attempt: the marker probe or status query, when there was one. */
  readonly evidence: {
    readonly markerProbe: {
      readonly attempt: number;
      readonly marker: string;
      readonly exitStatus: number | null;
      readonly probedAt: string;
      readonly markerAttempt?: number | null;
      readonly failure?: string | null;
      readonly keptOutput?: { readonly host: string; readonly paths: readonly string[] } | null;
    } | null;
    readonly statusQuery: { readonly attempt: number; readonly preconditionHolds: boolean; readonly observedStatus: string | null; readonly queriedAt: string } | null;
  };
  readonly record: OperationRecord;
  /** Where the call went, as the tool's contract renders it (the same facts as an approval's target). */
  readonly target: ApprovalTarget;
  readonly tool: string;
  readonly actor: string;
  readonly operationClass: string;
  readonly events: readonly ReviewEvent[];
}

/** `GET /console/api/reviews`: every held execution. */
export interface ReviewsAnswer {
  readonly reviews: readonly ReviewView[];
}

// ---------------------------------------------------------------------------------------------------------------
// The navigation's counts: `GET /console/api/counts`.

export interface QueueCountsAnswer {
  /** Requests waiting for an approval. */
  readonly approvals: number;
  /** Executions waiting for an operator: held for review, or a resend waiting for a second operator. */
  readonly reviews: number;
  /** When the gateway counted. */
  readonly countedAt: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The decision history: `GET /console/api/decisions?…`, newest first.

/** What a person decided: an approval granted or denied, or a review resolved as one of its resolutions. */
export type DecisionOutcome = 'granted' | 'denied' | ReviewResolution;

/** What the search's `decision` parameter takes: a decision, or `resend` for a not-executed resolution that asked to send it again. */
export type DecisionFilter = DecisionOutcome | 'resend';

/** The execution as it stands now: what followed the decision. */
export interface DecisionFollowed {
  readonly state: string;
  readonly attempts: number;
  readonly targetStatus: number | null;
  readonly exitCode: number | null;
  /** The target's definite answer was an error. */
  readonly errorAnswer: boolean;
  readonly denialBasis: string | null;
  readonly reviewReason: string | null;
}

/** One recorded decision (an `ApprovalGranted`, `ApprovalDenied` or `ReviewResolved` event). */
export interface DecisionEntry {
  /** The event's global position: the history's order, and its paging cursor. */
  readonly position: number;
  readonly executionId: string;
  readonly kind: 'approval' | 'review';
  readonly decision: DecisionOutcome;
  /** A not-executed resolution that asked to send it again now (an irreversible call's first asks, a second operator's confirms). */
  readonly resend: boolean;
  /** `approver:<name>`, or who else decided (a policy, the CLI's operator). */
  readonly by: string;
  readonly reason: string;
  /** When it was decided. */
  readonly at: string;
  readonly tool: string;
  /** The agent whose call it was. */
  readonly actor: string;
  readonly operationClass: string;
  readonly followed: DecisionFollowed;
}

/**
 * The parameters of `GET /console/api/decisions` (all optional; text matches ignore case): `by` (part of who
 * decided), `tool` (part of the tool's name), `decision` (comma-separated {@link DecisionFilter}s), `text` (part
 * of the reason), `execution` (an execution id), `from` / `to` (ISO-8601 instants, inclusive), `before` (a
 * position: older decisions only, to page on) and `limit` (1 to 100, default 50).
 */
export interface DecisionsQuery {
  readonly by?: string;
  readonly tool?: string;
  readonly decision?: string;
  readonly text?: string;
  readonly execution?: string;
  readonly from?: string;
  readonly to?: string;
  readonly before?: number;
  readonly limit?: number;
}

export interface DecisionsAnswer {
  /** Matching decisions, newest first. */
  readonly decisions: readonly DecisionEntry[];
  /**
   * Pass as `before` to continue with older decisions; `null` when the journal holds no older match. A search reads
   * at most a bounded number of decisions per request, so a page may hold fewer than `limit` and still have a `next`.
   */
  readonly next: number | null;
  /** How many recorded decisions this request read. */
  readonly scanned: number;
}

// ---------------------------------------------------------------------------------------------------------------
// The incident view: `GET /console/api/executions/<execution-id>` (`oncegate investigate`).

export interface TimelineEntry {
  /** When the store recorded the event. */
  readonly time: string;
  readonly position: number;
  readonly stream: string;
  readonly revision: number;
  readonly type: string;
  readonly executionId: string | null;
  readonly actor: string | null;
  /** e.g. `rpc=7 session=3f2a… transport=streamable-http`; empty when none was recorded. */
  readonly correlation: string;
  readonly detail: string;
}

/** One of the six answers; `facts` are described where the console reads them. */
export interface InvestigationAnswer<Facts = unknown> {
  readonly question: string;
  readonly summary: string;
  /** Global positions of the events the answer rests on. */
  readonly evidence: readonly number[];
  readonly facts: Facts;
}

/** A later call of the same intent, attached to an execution. */
export interface AttachedCallFact {
  readonly executionId: string;
  readonly at: string;
  readonly returned: string;
  readonly replayed: boolean;
  readonly jsonRpcId: string | number | null;
  readonly sessionId: string | null;
  readonly position: number;
}

export interface ExecutionSummary {
  readonly executionId: string;
  readonly fingerprint: string;
  readonly actor: string;
  readonly tool: string;
  readonly scope: string;
  readonly acceptedAt: string;
  readonly acceptedPosition: number;
  readonly status: string;
  /** Every attempt, in order, with the dispatcher instance that ran it; empty when it was never dispatched. */
  readonly attempts: readonly { readonly attempt: number; readonly dispatcherId: string; readonly dispatchedAt: string; readonly position: number }[];
}

export interface Investigation {
  readonly subject: { readonly executionId: string } | { readonly fingerprint: string };
  /** False when nothing was recorded for the subject (the console API then answers 404). */
  readonly found: boolean;
  /** The executions investigated, in acceptance order. */
  readonly executions: readonly ExecutionSummary[];
  readonly timeline: readonly TimelineEntry[];
  readonly answers: {
    readonly processes: InvestigationAnswer;
    readonly firstCall: InvestigationAnswer;
    readonly outcome: InvestigationAnswer;
    readonly delivery: InvestigationAnswer;
    readonly secondCall: InvestigationAnswer<{ readonly attaches: readonly AttachedCallFact[] }>;
    /** Was the agent told, and what: per call, the state it was told and whether delivery is proven. */
    readonly told: InvestigationAnswer;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Executions search: `GET /executions?…` (an approver token) and `GET /console/api/executions?…` (the console's
// session), answered from the executions index. Filters (each repeatable or comma-separated): tool, actor, class,
// state, run, channel, host; since and until (ISO-8601, or a time ago: 30m, 1h, 2d); limit (1 to 1000, default 50)
// and cursor (the previous page's nextCursor).

/** The `code` of an executions API error. */
export type ExecutionsApiErrorCode = 'unauthorized' | 'forbidden' | 'unavailable' | 'invalid_query' | 'not_found' | 'method_not_allowed' | 'internal';

/** One execution as the index holds it. */
export interface ExecutionRowView {
  readonly executionId: string;
  readonly tool: string;
  readonly actor: string;
  /** `read_only`, `idempotent_write`, `conditional_write`, `irreversible` or `remote_command`. */
  readonly operationClass: string;
  /** The execution's state, in the domain's words (`outcome_unknown`, `needs_review`, `delivered`, …). */
  readonly state: string;
  readonly runId: string | null;
  readonly channel: string;
  readonly target: string;
  readonly targetHost: string;
  readonly attempts: number;
  readonly retriesAttached: number;
  readonly acceptedAt: string;
  readonly lastChangeAt: string;
  /** The global position of its latest event. */
  readonly lastPosition: number;
  readonly firstDispatchedAt: string | null;
  readonly targetStatus: number | null;
  readonly exitCode: number | null;
  /** The target's definite answer was an error (the state stays `completed`). */
  readonly errorAnswer: boolean;
  readonly reviewReason: string | null;
  readonly denialBasis: string | null;
  /** `pending`, `granted` or `denied` when an approval was asked for. */
  readonly approval: string | null;
  readonly fingerprint: string;
}

/** How far the index has folded the journal: `behind` events were committed after `position`. */
export interface ExecutionsIndexLag {
  readonly position: number;
  readonly head: number;
  readonly behind: number;
}

export interface ExecutionsAnswer {
  /** Newest first (accepted at, then execution id). */
  readonly executions: readonly ExecutionRowView[];
  /** `?cursor=` of the next page; `null` on the last page. */
  readonly nextCursor: string | null;
  readonly index: ExecutionsIndexLag;
}
