/**
 * Matching a retry to an earlier execution of the same intent (docs/design.md section 5), as pure functions. The caller
 * has already found `prior` through the atomic per-fingerprint claim; this decides what the retry gets.
 *
 * Delivery evidence: the gateway can only know that it wrote a response, never that the client read it, so
 * `delivered` (ResultDelivered) means the protocol proved receipt — a later request on the same MCP session
 * after the response was fully written, a `Last-Event-ID` at or past the response's event on a resumed stream,
 * a later message on the same stdio connection. A response written and never acknowledged leaves the execution
 * `completed` (or `completed_result_not_delivered` when the transport closed first), and a matching call gets
 * the stored result back. Only `delivered` starts the redelivery grace, and for conditional writes, irreversible
 * calls and remote commands not even that ends the match: a repeat inside the correlation window attaches
 * unless the caller declares a new intent (`_meta["io.oncegate/new-intent"]: true`).
 */
import { addMs, isBefore, type IsoInstant } from './durations';
import { IdempotencyKeyConflictError } from './errors';
import type { DenialBasis, RetryReturn, ReviewReason } from './events';
import {
  statusIn,
  UNSETTLED_STATUSES,
  type ExecutionState,
  type ExecutionStatus,
} from './execution-state';
import type { Fingerprint } from './fingerprint-value';
import { recoveryPolicyOf, retriesForWholeWindow, type OperationClass, type RecoveryAction } from './operation-class';
import type { ExecutionId } from './streams';

/**
 * States a retry can attach to while the prior's window is open. docs/design.md section 5 lists accepted through
 * completed/delivered; `denied` and `failed` are added because recover_or_attach returns the same denial or
 * failure (invariant 4), and `abandoned` because a review the operator closed must not turn into a fresh attempt
 * either; `not_executed` because the retry of a call a review found not executed sends its next attempt, under the
 * same execution id. `delivered` additionally needs the redelivery grace, except for the classes whose grace is the whole
 * window (`retriesForWholeWindow`).
 */
export const MATCHABLE = [
  'accepted',
  'awaiting_approval',
  'authorized',
  'denied',
  'dispatched',
  'outcome_unknown',
  'needs_review',
  'completed',
  'completed_result_not_delivered',
  'delivered',
  'failed',
  'abandoned',
  'not_executed',
] as const satisfies readonly ExecutionStatus[];

/** Matchable states that can end with the window and be expired (everything settled or not yet sent). */
export const EXPIRABLE = [
  'accepted',
  'awaiting_approval',
  'authorized',
  'denied',
  'completed',
  'completed_result_not_delivered',
  'delivered',
  'failed',
  'abandoned',
  'not_executed',
] as const satisfies readonly ExecutionStatus[];

export type NewExecutionReason =
  | 'no_prior'
  /** `_meta["io.oncegate/new-intent"]: true`. */
  | 'new_intent_requested'
  | 'prior_cancelled'
  | 'prior_expired'
  | 'window_ended'
  | 'redelivery_grace_disabled'
  | 'redelivery_grace_elapsed';

export type AttachAction =
  /** Not yet dispatched: carry on with the same execution. */
  | { readonly kind: 'continue' }
  /** Show the original pending approval; never a second prompt. */
  | { readonly kind: 'show_pending_approval' }
  | { readonly kind: 'return_denial'; readonly basis: DenialBasis | null }
  /** Dispatched (in flight) or outcome unknown: what recovery does is the class's business. */
  | {
      readonly kind: 'recover_by_class';
      readonly operationClass: OperationClass;
      readonly recovery: RecoveryAction;
      /** True while the attempt is still in flight (no outcome, known or unknown, yet). */
      readonly inFlight: boolean;
    }
  /** Completed (an error answer included) and not (yet) handed to any client: return it, no dispatch. */
  | { readonly kind: 'return_stored_result'; readonly resultRef: string | null }
  /** Delivered inside the redelivery grace: return it again, marked replayed. */
  | { readonly kind: 'replay_stored_result'; readonly resultRef: string | null }
  /** Nothing was sent (`failed`): return that, no dispatch. */
  | { readonly kind: 'return_failure' }
  | { readonly kind: 'return_review_hold'; readonly reason: ReviewReason | null }
  /** A review found the last attempt not executed: this retry sends the next one, same execution id and key. */
  | { readonly kind: 'send_again' }
  | { readonly kind: 'return_abandoned' };

export type AttachActionKind = AttachAction['kind'];

export type MatchDecision =
  | {
      readonly kind: 'new_execution';
      readonly reason: NewExecutionReason;
      /** The prior's window has ended and it should be expired (ExecutionExpired) so it never dispatches later. */
      readonly expirePrior: boolean;
    }
  | { readonly kind: 'attach'; readonly executionId: ExecutionId; readonly action: AttachAction };

export interface MatchRetryInput {
  /** The latest execution claimed under the fingerprint, folded; `undefined` when there is none. */
  readonly prior: ExecutionState | undefined;
  readonly now: IsoInstant;
  /** `_meta["io.oncegate/new-intent"]: true` always gives a new execution. */
  readonly newIntent: boolean;
}

export function matchRetry({ prior, now, newIntent }: MatchRetryInput): MatchDecision {
  if (newIntent) return newExecution('new_intent_requested');
  if (!prior || !prior.accepted || !prior.executionId) return newExecution('no_prior');

  const { status, accepted, executionId } = prior;
  if (status === 'cancelled') return newExecution('prior_cancelled');
  if (status === 'expired') return newExecution('prior_expired');

  // A side effect in flight or of unknown outcome stays attached past its window: a fresh execution would be a
  // second dispatch no recovery rule allowed (invariants 2 and 4).
  const windowEnded = accepted.windowEndsAt !== null && !isBefore(now, accepted.windowEndsAt);
  if (windowEnded && !statusIn(status, UNSETTLED_STATUSES)) {
    return newExecution('window_ended', statusIn(status, EXPIRABLE));
  }

  const attach = (action: AttachAction): MatchDecision => ({ kind: 'attach', executionId, action });
  switch (status) {
    case 'accepted':
    case 'authorized':
      return attach({ kind: 'continue' });
    case 'awaiting_approval':
      return attach({ kind: 'show_pending_approval' });
    case 'denied':
      return attach({ kind: 'return_denial', basis: prior.denial?.basis ?? null });
    case 'dispatched':
    case 'outcome_unknown':
      return attach({
        kind: 'recover_by_class',
        operationClass: accepted.operationClass,
        recovery: recoveryPolicyOf(accepted.operationClass).afterUnknownOutcome,
        inFlight: status === 'dispatched',
      });
    case 'needs_review':
      return attach({ kind: 'return_review_hold', reason: prior.review?.reason ?? null });
    // `completed` has no delivery yet: the response was never written, so it is not replayed, just returned.
    case 'completed':
    case 'completed_result_not_delivered':
      return attach({ kind: 'return_stored_result', resultRef: prior.outcome?.resultRef ?? null });
    case 'delivered': {
      // A repeat of a conditional write, an irreversible call or a remote command inside its window is a retry,
      // whatever the delivery record or the recorded grace says: only the caller's new intent starts another.
      const grace = retriesForWholeWindow(accepted.operationClass) ? null : accepted.redeliveryGraceMs;
      if (grace === null) return attach({ kind: 'replay_stored_result', resultRef: prior.outcome?.resultRef ?? null });
      if (grace === 0) return newExecution('redelivery_grace_disabled');
      const deliveredAt = prior.delivery?.lastDeliveredAt ?? null;
      if (deliveredAt === null || !isBefore(now, addMs(deliveredAt, grace))) {
        return newExecution('redelivery_grace_elapsed');
      }
      return attach({ kind: 'replay_stored_result', resultRef: prior.outcome?.resultRef ?? null });
    }
    case 'failed':
      return attach({ kind: 'return_failure' });
    case 'abandoned':
      return attach({ kind: 'return_abandoned' });
    case 'not_executed':
      return attach({ kind: 'send_again' });
    case 'initial':
      return newExecution('no_prior');
    default:
      return assertNever(status);
  }
}

/** What RetryAttached records as returned for an attach action. */
export function retryReturnOf(action: AttachAction): { readonly returned: RetryReturn; readonly replayed: boolean } {
  switch (action.kind) {
    case 'continue':
      return { returned: 'continued', replayed: false };
    case 'show_pending_approval':
      return { returned: 'pending', replayed: false };
    case 'return_denial':
      return { returned: 'denial', replayed: false };
    case 'recover_by_class':
      if (action.inFlight) return { returned: 'pending', replayed: false };
      return { returned: action.recovery === 'hold_for_review' ? 'unknown' : 'recovering', replayed: false };
    case 'return_stored_result':
      return { returned: 'stored_result', replayed: false };
    case 'replay_stored_result':
      return { returned: 'stored_result', replayed: true };
    case 'return_failure':
      return { returned: 'failure', replayed: false };
    case 'return_review_hold':
      return { returned: 'review_hold', replayed: false };
    case 'return_abandoned':
      return { returned: 'abandoned', replayed: false };
    // What follows is recovery's: the next attempt, as after an unknown outcome the agent retried.
    case 'send_again':
      return { returned: 'recovering', replayed: false };
    default:
      return assertNever(action);
  }
}

/** The execution a caller idempotency key was first claimed for (read from its `idempotency-…` stream). */
export interface IdempotencyKeyClaim {
  readonly executionId: ExecutionId;
  readonly fingerprint: Fingerprint;
  readonly actor: string;
  readonly tool: string;
}

export type IdempotencyKeyCheck =
  | { readonly kind: 'unclaimed' }
  | { readonly kind: 'same_intent'; readonly executionId: ExecutionId };

/**
 * The caller idempotency-key rule (docs/design.md section 5): the same key with a different canonical record is refused
 * with an error naming the first execution, never treated as a new intent. `fingerprints` holds the new call's
 * fingerprint under every active key of the ring, so a key rotation does not look like a different record.
 */
export function checkIdempotencyKey(input: {
  readonly claim: IdempotencyKeyClaim | undefined;
  readonly fingerprints: readonly Fingerprint[];
}): IdempotencyKeyCheck {
  const { claim, fingerprints } = input;
  if (!claim) return { kind: 'unclaimed' };
  if (fingerprints.includes(claim.fingerprint)) return { kind: 'same_intent', executionId: claim.executionId };
  throw new IdempotencyKeyConflictError(claim.executionId, claim.actor, claim.tool);
}

function newExecution(reason: NewExecutionReason, expirePrior = false): MatchDecision {
  return { kind: 'new_execution', reason, expirePrior };
}

function assertNever(value: never): never {
  throw new TypeError(`unexpected value ${JSON.stringify(value)}`);
}
