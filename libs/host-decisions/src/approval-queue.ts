/**
 * The approval queue: what people deciding approvals list, read and decide. Approvals are events on the
 * execution stream (docs/design.md section 4): the authorization service asks (`ApprovalRequested`) and turns a decision
 * into its verdict; this module only lists, shows and appends `ApprovalGranted` / `ApprovalDenied` through the
 * decider. A retry never asks again, so one request shows every call attached to it.
 */
import type { ToolContract } from '@oncegate/contracts';
import {
  formatIntentScope,
  isBefore,
  type ApprovalDecidedData,
  type ApprovalRequestedData,
  type ApprovalScope,
  type ExecutionAcceptedData,
  type ExecutionId,
  type ExecutionState,
  type ExecutionStatus,
  type Fingerprint,
  type IsoInstant,
  type JsonObject,
  type OperationClass,
  type ProtocolCorrelation,
  type RedactedCanonicalRecord,
  type RetryAttachedData,
  type RetryReturn,
} from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import {
  executionsWithEvent,
  isoNow,
  loadExecution,
  runExecutionCommand,
  systemClock,
  type Clock,
  type LoadedExecution,
} from '@oncegate/execution-journal';
import { processMetrics } from '@oncegate/host-operations';

/** Longest decision reason accepted; reasons are recorded in the journal for good. */
export const MAX_APPROVAL_REASON_LENGTH = 1000;

export type ApprovalDecision = 'approve' | 'deny';

/** One line of the queue. */
export interface PendingApproval {
  readonly executionId: ExecutionId;
  readonly actor: string;
  readonly tool: string;
  readonly runId: string | null;
  readonly scope: ApprovalScope;
  readonly requestedBy: string;
  readonly requestedAt: IsoInstant;
  readonly reason: string;
  readonly expiresAt: IsoInstant | null;
  /** Later calls of the same intent attached to this request (they never ask again). */
  readonly retriesAttached: number;
}

/** Where the call goes, from the recorded target and the tool's contract. */
export interface ApprovalTarget {
  /** The contract's logical target, as recorded in the operation record. */
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

export interface AttachedCall {
  readonly correlation: ProtocolCorrelation;
  /** What the retry was given (`pending` while the approval waits). */
  readonly returned: RetryReturn;
  readonly attachedAt: IsoInstant;
}

export interface ApprovalRequestView {
  readonly scope: ApprovalScope;
  /** What granting does, said plainly. */
  readonly grants: string;
  readonly requestedBy: string;
  readonly requestedAt: IsoInstant;
  readonly reason: string;
  readonly expiresAt: IsoInstant | null;
  /** `closed`: nobody decided and the execution moved on (timed out, the vault locked, cancelled); `summary` says how. */
  readonly decision: 'pending' | 'granted' | 'denied' | 'closed';
  readonly decidedBy: string | null;
  readonly decidedAt: IsoInstant | null;
  readonly decisionReason: string | null;
}

/** Everything an approver needs to decide one request. */
export interface ApprovalView {
  readonly executionId: ExecutionId;
  /** The execution's state; it stays `awaiting_approval` after a decision until authorization records its verdict. */
  readonly state: ExecutionStatus;
  /** The approval's state in one phrase: `pending`, `granted by … at …`, `denied: approval_timeout at … (…)`. */
  readonly summary: string;
  readonly actor: string;
  readonly runId: string | null;
  readonly tool: string;
  readonly channel: string;
  readonly operationClass: OperationClass;
  readonly fingerprint: Fingerprint;
  readonly intentScope: string;
  readonly acceptedAt: IsoInstant;
  readonly target: ApprovalTarget;
  /** The recorded arguments: secret arguments are HMACs, never values. */
  readonly arguments: JsonObject;
  readonly approval: ApprovalRequestView;
  /** Calls that matched this execution after the first; none of them made a request of its own. */
  readonly attachedCalls: readonly AttachedCall[];
  /** The redacted canonical operation record, as accepted. */
  readonly record: RedactedCanonicalRecord;
}

export type ApprovalRefusalKind = 'not_found' | 'not_pending' | 'invalid_decision';

/** Why the queue refused; the CLI maps `kind` to exit codes and the HTTP API to status codes, in one place each. */
export abstract class ApprovalRefusedError extends Error {
  abstract readonly kind: ApprovalRefusalKind;
}

/** No such execution, or (for `show`) an execution nobody asked to approve. */
export class ApprovalNotFoundError extends ApprovalRefusedError {
  readonly kind = 'not_found' as const;
  constructor(
    readonly executionId: ExecutionId,
    /** `initial` when there is no execution at all. */
    readonly status: ExecutionStatus,
  ) {
    super(
      status === 'initial'
        ? `no execution ${executionId} in this journal`
        : `execution ${executionId} has no approval request (state: ${status})`,
    );
    this.name = 'ApprovalNotFoundError';
  }
}

/** The execution is not awaiting a decision: a second decision, or one after a timeout, appends nothing. */
export class ApprovalNotPendingError extends ApprovalRefusedError {
  readonly kind = 'not_pending' as const;
  constructor(
    readonly executionId: ExecutionId,
    readonly status: ExecutionStatus,
    /** What happened to the approval, e.g. `already granted by user:alice at …`. */
    readonly summary: string,
  ) {
    super(`execution ${executionId} is not awaiting approval: ${summary}`);
    this.name = 'ApprovalNotPendingError';
  }
}

/** A decision without a reason or decider, or with a reason over the limit. */
export class InvalidApprovalDecisionError extends ApprovalRefusedError {
  readonly kind = 'invalid_decision' as const;
  constructor(
    readonly field: 'reason' | 'by',
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'InvalidApprovalDecisionError';
  }
}

export type ApprovalRefusal = ApprovalNotFoundError | ApprovalNotPendingError | InvalidApprovalDecisionError;

export function isApprovalRefusal(value: unknown): value is ApprovalRefusal {
  return value instanceof ApprovalRefusedError;
}

/**
 * Every execution awaiting a decision now, oldest request first. A request past its expiry is left out: it can
 * no longer be decided, and authorization denies it (`approval_timeout`).
 */
export async function pending(store: EventStore, clock: Clock = systemClock): Promise<PendingApproval[]> {
  const now = isoNow(clock);
  const executions = await executionsWithEvent(store, 'ApprovalRequested', (state) => isPending(state) && !hasExpired(state, now));
  return executions
    .map(({ state }): PendingApproval => {
      const accepted = state.accepted!;
      const approval = state.approval!;
      return {
        executionId: state.executionId!,
        actor: accepted.actor,
        tool: accepted.toolName,
        runId: accepted.runId,
        scope: approval.scope,
        requestedBy: approval.requestedBy,
        requestedAt: approval.requestedAt,
        reason: approval.reason,
        expiresAt: approval.expiresAt,
        retriesAttached: state.retriesAttached,
      };
    })
    .sort((a, b) => Date.parse(a.requestedAt) - Date.parse(b.requestedAt));
}

export interface ShowOptions {
  /** The gateway's tool contracts, for the target's request details; without them only the recorded target is shown. */
  readonly tools?: ReadonlyMap<string, ToolContract>;
  /** Tells whether a pending request has expired. Default: the system clock. */
  readonly clock?: Clock;
}

/** One approval request with everything needed to decide it (also after it was decided). */
export async function show(store: EventStore, executionId: ExecutionId, options: ShowOptions = {}): Promise<ApprovalView> {
  return viewOf(await loadExecution(store, executionId), options.tools, isoNow(options.clock ?? systemClock));
}

/**
 * Appends `ApprovalGranted` or `ApprovalDenied`, exactly once: the pending check and the append happen on one
 * read of the stream, and a concurrent writer makes the loop decide again on what is really there. Returns the
 * view after the decision.
 */
export async function decide(
  store: EventStore,
  clock: Clock,
  executionId: ExecutionId,
  decision: ApprovalDecision,
  by: string,
  reason: string,
  tools?: ReadonlyMap<string, ToolContract>,
): Promise<ApprovalView> {
  const text = reason.trim();
  const characters = [...text].length;
  if (characters === 0) throw new InvalidApprovalDecisionError('reason', 'a reason is required: say why');
  if (characters > MAX_APPROVAL_REASON_LENGTH) {
    throw new InvalidApprovalDecisionError('reason', `at most ${MAX_APPROVAL_REASON_LENGTH} characters (got ${characters})`);
  }
  if (by.trim().length === 0) throw new InvalidApprovalDecisionError('by', 'say who decides');
  let refusal: ApprovalRefusal | undefined;
  const outcome = await runExecutionCommand(
    store,
    executionId,
    (_state, execution) => {
      const now = isoNow(clock);
      refusal = refusalFor(execution, now);
      if (refusal !== undefined) return undefined;
      return { type: decision === 'approve' ? 'GrantApproval' : 'DenyApproval', executionId, now, by, reason: text };
    },
    { actor: by },
    clock,
  );
  if (refusal !== undefined || outcome.appended.length === 0) throw refusal ?? new Error(`no decision was recorded for ${executionId}`);
  const view = await show(store, executionId, { clock, ...(tools ? { tools } : {}) });
  if (view.approval.decidedAt !== null) {
    const waited = (Date.parse(view.approval.decidedAt) - Date.parse(view.approval.requestedAt)) / 1000;
    processMetrics().approvalDecisionSeconds.observe({ decision: view.approval.decision }, Math.max(0, waited));
  }
  return view;
}

/** Is the execution waiting for a decision on its approval request? */
export function isPending(state: ExecutionState): boolean {
  return state.status === 'awaiting_approval' && state.approval?.decision === 'pending';
}

function hasExpired(state: ExecutionState, now: IsoInstant): boolean {
  const expiresAt = state.approval?.expiresAt;
  return expiresAt != null && !isBefore(now, expiresAt);
}

/** Why no decision may be appended now, or `undefined` when one may. */
function refusalFor(execution: LoadedExecution, now: IsoInstant): ApprovalRefusal | undefined {
  const { state, executionId } = execution;
  if (state.status === 'initial') return new ApprovalNotFoundError(executionId, state.status);
  if (isPending(state) && !hasExpired(state, now)) return undefined;
  const { text, settled } = describeApproval(execution, now);
  return new ApprovalNotPendingError(executionId, state.status, settled ? `already ${text}` : text);
}

interface ApprovalHistory {
  readonly requested: ApprovalRequestedData | undefined;
  readonly decided: { readonly granted: boolean; readonly data: ApprovalDecidedData } | undefined;
}

function historyOf(execution: LoadedExecution): ApprovalHistory {
  let requested: ApprovalRequestedData | undefined;
  let decided: ApprovalHistory['decided'];
  for (const event of execution.events) {
    if (event.type === 'ApprovalRequested') requested = event.data as ApprovalRequestedData;
    if (event.type === 'ApprovalGranted' || event.type === 'ApprovalDenied') {
      decided = { granted: event.type === 'ApprovalGranted', data: event.data as ApprovalDecidedData };
    }
  }
  return { requested, decided };
}

/** The approval's state in one phrase, naming who decided or what denied it; `settled` once it was decided or denied. */
function describeApproval(execution: LoadedExecution, now: IsoInstant): { readonly text: string; readonly settled: boolean } {
  const settled = (text: string) => ({ text, settled: true });
  const open = (text: string) => ({ text, settled: false });
  const { state } = execution;
  const { requested, decided } = historyOf(execution);
  if (decided !== undefined) {
    const verb = decided.granted ? 'granted' : 'denied';
    const after = state.status === 'awaiting_approval' ? '' : `; the execution is now ${state.status}`;
    return settled(`${verb} by ${decided.data.by} at ${decided.data.decidedAt}${after}`);
  }
  if (state.status === 'denied' && state.denial !== null) {
    return settled(`denied: ${state.denial.basis} at ${state.denial.deniedAt} (${state.denial.reason})`);
  }
  if (requested === undefined) return open(`no approval was requested (state: ${state.status})`);
  if (isPending(state)) {
    return open(hasExpired(state, now) ? `the request expired at ${state.approval!.expiresAt}; it is being denied (approval_timeout)` : 'pending');
  }
  return open(`no longer awaiting a decision (state: ${state.status})`);
}

function grantsOf(scope: ApprovalScope, executionId: ExecutionId, actor: string, tool: string, runId: string | null): string {
  return scope === 'run'
    ? `Approving grants run ${runId} of ${actor} a session grant for ${tool}: this call, the run's other calls of ${tool} waiting for it, and every later call of ${tool} in that run are authorized without asking again, until the run ends.`
    : `Approving lets this one execution (${executionId}) proceed; nothing else is approved.`;
}

/** Where a call goes, from its recorded target and its tool's contract: what an approval shows, and a review too. */
export function targetOf(record: RedactedCanonicalRecord, contract: ToolContract | undefined): ApprovalTarget {
  const request = contract?.request;
  return {
    name: record.target,
    method: request?.kind === 'http' ? request.method : (record.method ?? null),
    url: request?.kind === 'http' ? request.url : null,
    sshHost: request?.kind === 'ssh' ? `${request.user}@${request.host}:${request.port}` : null,
    argv: request?.kind === 'ssh' ? request.argv : null,
    inContract: contract !== undefined,
  };
}

function viewOf(execution: LoadedExecution, tools: ReadonlyMap<string, ToolContract> | undefined, now: IsoInstant): ApprovalView {
  const { state, executionId } = execution;
  const { requested, decided } = historyOf(execution);
  if (state.status === 'initial' || requested === undefined) throw new ApprovalNotFoundError(executionId, state.status);
  const accepted = execution.events.find((event) => event.type === 'ExecutionAccepted')!.data as ExecutionAcceptedData;
  const record = accepted.record;
  const scope = requested.scope ?? 'execution';
  const runId = requested.runId ?? accepted.runId ?? null;
  return {
    executionId,
    state: state.status,
    summary: describeApproval(execution, now).text,
    actor: record.actor,
    runId,
    tool: accepted.toolName,
    channel: record.channel,
    operationClass: accepted.operationClass,
    fingerprint: accepted.fingerprint,
    intentScope: formatIntentScope(accepted.intentScope),
    acceptedAt: accepted.acceptedAt,
    target: targetOf(record, tools?.get(accepted.toolName)),
    arguments: record.arguments,
    approval: {
      scope,
      grants: grantsOf(scope, executionId, record.actor, accepted.toolName, runId),
      requestedBy: requested.requestedBy,
      requestedAt: requested.requestedAt,
      reason: requested.reason,
      expiresAt: requested.expiresAt ?? null,
      decision: decided !== undefined ? (decided.granted ? 'granted' : 'denied') : isPending(state) ? 'pending' : 'closed',
      decidedBy: decided?.data.by ?? null,
      decidedAt: decided?.data.decidedAt ?? null,
      decisionReason: decided?.data.reason ?? null,
    },
    attachedCalls: execution.events
      .filter((event) => event.type === 'RetryAttached')
      .map((event) => {
        const data = event.data as RetryAttachedData;
        return { correlation: data.correlation, returned: data.returned, attachedAt: data.attachedAt };
      }),
    record,
  };
}
