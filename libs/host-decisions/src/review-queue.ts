/**
 * The review queue: executions the gateway will not settle alone (`ReviewRequired`, docs/design.md section 6).
 * Operators list them, read why each is held with the evidence recovery gathered, and resolve them as
 * completed, not executed or abandoned. A resolution sends nothing by itself: an execution found not executed is
 * sent again (same execution id and key) when the agent retries, or at once when an operator asks for a resend —
 * for an irreversible call only once a second operator confirms it. The CLI (`oncegate review`), the console and
 * the bus all call this module; a resolution is appended through the decider with the stream's expected
 * revision, so two operators resolving at once end with one resolution and the other is told why.
 */
import {
  executionStatusView,
  isBefore,
  type ExecutionAcceptedData,
  type ExecutionId,
  type ExecutionState,
  type ExecutionStatus,
  type ExecutionStatusView,
  type IsoInstant,
  type MarkerProbeEvidence,
  type RedactedCanonicalRecord,
  type ReviewFacts,
  type ReviewReason,
  type ReviewResolution,
  type StatusQueryEvidence,
} from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { executionsWithEvent, isoNow, loadExecution, runExecutionCommand, toDomainEvent, type Clock, type LoadedExecution } from '@oncegate/execution-journal';
import { detailOf } from '@oncegate/projections';

/** Longest resolution reason accepted; it is recorded in the journal for good. */
export const MAX_REVIEW_REASON_LENGTH = 1000;

export const REVIEW_RESOLUTIONS: readonly ReviewResolution[] = ['completed', 'not_executed', 'abandoned'];

/** One line of the queue. */
export interface HeldExecution {
  readonly executionId: ExecutionId;
  readonly tool: string;
  readonly actor: string;
  readonly reason: ReviewReason;
  readonly requiredAt: IsoInstant;
  readonly attempts: number;
  /**
   * Resolved as not executed, with a resend of an irreversible call asked by this operator and waiting for a second
   * one to confirm it; `null` for an execution still held for review.
   */
  readonly resendAskedBy: string | null;
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
export interface ReviewView extends ExecutionStatusView {
  /** Always known: only an accepted execution is reviewed. */
  readonly executionId: ExecutionId;
  readonly review: ReviewFacts | null;
  /** Evidence recovery gathered for the current attempt: the marker probe or status query, when there was one. */
  readonly evidence: { readonly markerProbe: MarkerProbeEvidence | null; readonly statusQuery: StatusQueryEvidence | null };
  /** The redacted canonical operation record, as accepted: secret arguments are HMACs. */
  readonly record: RedactedCanonicalRecord;
  readonly tool: string;
  readonly actor: string;
  readonly operationClass: string;
  readonly events: readonly ReviewEvent[];
}

export type ReviewRefusalKind = 'not_found' | 'not_held' | 'invalid_resolution';

/** Why the queue refused; the CLI and the console map `kind` to exit and status codes. */
export abstract class ReviewRefusedError extends Error {
  abstract readonly kind: ReviewRefusalKind;
}

export class ReviewNotFoundError extends ReviewRefusedError {
  readonly kind = 'not_found' as const;
  constructor(readonly executionId: ExecutionId) {
    super(`no execution ${executionId} in this journal`);
    this.name = 'ReviewNotFoundError';
  }
}

/** The execution is not held for review: never was, or another operator resolved it first. */
export class ReviewNotHeldError extends ReviewRefusedError {
  readonly kind = 'not_held' as const;
  constructor(
    readonly executionId: ExecutionId,
    readonly status: ExecutionStatus,
    readonly review: ReviewFacts | null,
  ) {
    super(
      (review?.resolution != null
        ? `${executionId} is not held for review: already resolved as ${review.resolution} by ${review.resolvedBy} at ${review.resolvedAt}; the execution is now ${status}`
        : `${executionId} is not held for review (state: ${status})`) +
        (status === 'not_executed' ? '; it is sent again when the agent calls again, or on a resend (not_executed with a resend)' : ''),
    );
    this.name = 'ReviewNotHeldError';
  }
}

export class InvalidReviewResolutionError extends ReviewRefusedError {
  readonly kind = 'invalid_resolution' as const;
  constructor(
    readonly field: 'resolution' | 'reason' | 'by' | 'resend',
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'InvalidReviewResolutionError';
  }
}

export type ReviewRefusal = ReviewNotFoundError | ReviewNotHeldError | InvalidReviewResolutionError;

export function isReviewRefusal(value: unknown): value is ReviewRefusal {
  return value instanceof ReviewRefusedError;
}

/** A resend of an irreversible call asked by one operator and not yet confirmed by another. */
function resendWaiting(state: ExecutionState): string | null {
  const resend = state.status === 'not_executed' ? state.review?.resend : undefined;
  return resend != null && resend.confirmedBy === null ? resend.requestedBy : null;
}

/**
 * Executions waiting for an operator now, oldest first: every one still in `needs_review`, and every one resolved as
 * not executed whose resend waits for a second operator.
 */
export async function held(store: EventStore): Promise<HeldExecution[]> {
  const executions = await executionsWithEvent(store, 'ReviewRequired', (state) => state.status === 'needs_review' || resendWaiting(state) !== null);
  return executions
    .map(({ state }) => ({
      executionId: state.executionId!,
      tool: state.accepted!.toolName,
      actor: state.accepted!.actor,
      reason: state.review!.reason,
      requiredAt: state.review!.requiredAt,
      attempts: state.attempts,
      resendAskedBy: resendWaiting(state),
    }))
    .sort((a, b) => Date.parse(a.requiredAt) - Date.parse(b.requiredAt));
}

/** One accepted execution as a reviewer reads it. */
export async function showReview(store: EventStore, executionId: ExecutionId): Promise<ReviewView> {
  const execution = await loadExecution(store, executionId);
  if (execution.state.accepted === null) throw new ReviewNotFoundError(executionId);
  return reviewViewOf(execution);
}

export function reviewViewOf(execution: LoadedExecution): ReviewView {
  const { state } = execution;
  const accepted = execution.events.find((event) => event.type === 'ExecutionAccepted')!.data as ExecutionAcceptedData;
  const current = <T extends { readonly attempt: number }>(evidence: T | null): T | null => (evidence?.attempt === state.attempts ? evidence : null);
  return {
    ...executionStatusView(state),
    executionId: execution.executionId,
    review: state.review,
    evidence: { markerProbe: current(state.markerProbe), statusQuery: current(state.statusQuery) },
    record: accepted.record,
    tool: accepted.toolName,
    actor: accepted.record.actor,
    operationClass: accepted.operationClass,
    events: execution.events.map((event) => ({
      revision: event.revision,
      type: event.type,
      recordedAt: event.recordedAt,
      actor: String(event.metadata['actor'] ?? ''),
      detail: detailOf(toDomainEvent(event)),
    })),
  };
}

export interface ResolveOptions {
  /**
   * With `not_executed`: send it again now instead of when the agent retries. An irreversible call needs it from two
   * operators: the first asks, and the same resolution by another operator sends it.
   */
  readonly resend?: boolean;
}

/**
 * Appends `ReviewResolved`, exactly once: the held check and the append happen on one read of the stream, and a
 * concurrent writer makes the loop decide again on what is really there. Returns the view after it. The only
 * resolution an execution already resolved as not executed takes is a resend (asked later, or confirmed by a
 * second operator); every refusal says why.
 */
export async function resolveReview(
  store: EventStore,
  clock: Clock,
  executionId: ExecutionId,
  resolution: ReviewResolution,
  by: string,
  reason: string,
  options: ResolveOptions = {},
): Promise<ReviewView> {
  if (!REVIEW_RESOLUTIONS.includes(resolution)) {
    throw new InvalidReviewResolutionError('resolution', `one of ${REVIEW_RESOLUTIONS.join(', ')}`);
  }
  const resend = options.resend === true;
  if (resend && resolution !== 'not_executed') {
    throw new InvalidReviewResolutionError('resend', `only a not_executed resolution can be sent again, not ${resolution}`);
  }
  const text = reason.trim();
  const characters = [...text].length;
  if (characters === 0) throw new InvalidReviewResolutionError('reason', 'a reason is required: say why');
  if (characters > MAX_REVIEW_REASON_LENGTH) {
    throw new InvalidReviewResolutionError('reason', `at most ${MAX_REVIEW_REASON_LENGTH} characters (got ${characters})`);
  }
  if (by.trim().length === 0) throw new InvalidReviewResolutionError('by', 'say who resolves');
  let refusal: ReviewRefusal | undefined;
  const outcome = await runExecutionCommand(
    store,
    executionId,
    (state) => {
      const now = isoNow(clock);
      refusal = refusalOf(state, executionId, by, resend, now);
      if (refusal !== undefined) return undefined;
      return { type: 'ResolveReview', executionId, now, resolution, by, reason: text, ...(resend ? { resend: true } : {}) };
    },
    { actor: by },
    clock,
  );
  if (refusal !== undefined || outcome.appended.length === 0) throw refusal ?? new Error(`no resolution was recorded for ${executionId}`);
  return showReview(store, executionId);
}

/** Why this resolution cannot be recorded on the execution as it stands, or `undefined`; the decider's rules, in words. */
function refusalOf(state: ExecutionState, executionId: ExecutionId, by: string, resend: boolean, now: IsoInstant): ReviewRefusal | undefined {
  if (state.status === 'initial') return new ReviewNotFoundError(executionId);
  const resendable = state.status === 'not_executed' && resend;
  if (state.status !== 'needs_review' && !resendable) return new ReviewNotHeldError(executionId, state.status, state.review);
  const asked = state.review?.resend ?? null;
  if (resendable && state.accepted?.operationClass === 'irreversible' && asked !== null && asked.requestedBy === by) {
    return new InvalidReviewResolutionError(
      'by',
      `${by} asked to send ${executionId} again already (at ${asked.requestedAt}); a resend of an irreversible call needs a second operator: another operator resolves it as not_executed with a resend`,
    );
  }
  const windowEndsAt = state.accepted?.windowEndsAt ?? null;
  if (resend && windowEndsAt !== null && !isBefore(now, windowEndsAt)) {
    return new InvalidReviewResolutionError(
      'resend',
      `the correlation window of ${executionId} ended at ${windowEndsAt}: it can no longer be sent under this execution; resolve without a resend`,
    );
  }
  return undefined;
}

/** What a recorded resolution does next, in one sentence for whoever resolved it (CLI, console). */
export function resolutionOutcome(view: ReviewView): string {
  const review = view.review;
  const next = view.attempts + 1;
  switch (view.state) {
    case 'not_executed':
      return review?.resend != null && review.resend.confirmedBy === null
        ? `the resend waits for a second operator: another operator resolves ${view.executionId} as not_executed with a resend; until then it is sent again only if the agent calls again`
        : `nothing is sent until the agent calls again with the same arguments; that call sends attempt ${next} under the same execution id`;
    case 'authorized':
      return review?.resend?.confirmedBy != null
        ? `resend confirmed (asked by ${review.resend.requestedBy}, confirmed by ${review.resend.confirmedBy}): attempt ${next} is sent now under the same execution id`
        : `attempt ${next} is sent now under the same execution id`;
    case 'dispatched':
      return `attempt ${view.attempts} is on its way under the same execution id`;
    default:
      return `the execution is now ${view.state}`;
  }
}
