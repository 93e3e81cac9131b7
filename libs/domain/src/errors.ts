/**
 * Typed domain errors. Each class has a literal `kind` and the facts a caller needs to act; the edge maps them
 * to JSON-RPC/HTTP errors in one place. Messages are built from those facts only, and no fact is ever a secret.
 */
import type { ExecutionCommandType } from './commands';
import type { ExecutionStatus } from './execution-state';
import type { NewExecutionReason } from './matching';
import type { OperationClass } from './operation-class';
import type { RecoveryStepKind } from './recovery';

export const DOMAIN_ERROR_KINDS = [
  'illegal_transition',
  'stale_attempt',
  'attempt_limit_reached',
  'redispatch_not_allowed',
  'retry_not_matchable',
  'idempotency_key_conflict',
  'execution_id_mismatch',
  'invalid_command',
  'invalid_identifier',
] as const;

export type DomainErrorKind = (typeof DOMAIN_ERROR_KINDS)[number];

export abstract class DomainError extends Error {
  abstract readonly kind: DomainErrorKind;
}

export function isDomainError(value: unknown): value is DomainError {
  return value instanceof DomainError;
}

/** Which rule of the execution state machine refused a command. */
export type IllegalTransitionRule =
  /** The command needs an accepted execution and the stream is empty. */
  | 'execution_not_accepted'
  /** A second ExecutionAccepted is never appended to a stream. */
  | 'execution_already_accepted'
  /** The current state does not take this command at all. */
  | 'state_does_not_allow'
  /** An approval is already pending or decided; never a second approval prompt. */
  | 'approval_already_requested'
  | 'approval_not_pending'
  | 'approval_not_granted'
  | 'approval_not_denied'
  /** The verdict's basis does not fit how the execution got here (e.g. per-use approval without a grant). */
  | 'basis_not_applicable'
  /** Cancellation stops an execution only before Dispatched. */
  | 'already_dispatched'
  /** Delivery needs a definite outcome (succeeded or failed). */
  | 'no_definite_outcome'
  | 'window_still_open'
  /** The correlation window has ended: the execution no longer sends (a retry may have started a new one). */
  | 'window_ended'
  /** The window is "until confirmed": it never ends on its own. */
  | 'window_unbounded'
  /** A side effect may be in flight or its outcome is unknown; the execution must settle first. */
  | 'execution_unsettled'
  /** An outcome after an unknown one must be proven by recovery evidence that says exactly that. */
  | 'outcome_not_proven'
  | 'wrong_outcome_source'
  /** Recovery evidence of a kind the execution's class does not use. */
  | 'evidence_not_applicable'
  /** An irreversible call's resend asked by this operator already: another operator must confirm it. */
  | 'second_operator_required';

export class IllegalTransitionError extends DomainError {
  readonly kind = 'illegal_transition' as const;

  constructor(
    readonly commandType: ExecutionCommandType,
    readonly status: ExecutionStatus,
    readonly executionId: string | null,
    readonly rule: IllegalTransitionRule,
  ) {
    super(`${commandType} is not allowed for execution ${executionId ?? '(none)'} in state ${status}: ${rule}`);
    this.name = 'IllegalTransitionError';
  }
}

/** A dispatcher reported on an attempt that is not the execution's current one. */
export class StaleAttemptError extends DomainError {
  readonly kind = 'stale_attempt' as const;

  constructor(
    readonly commandType: ExecutionCommandType,
    readonly executionId: string,
    readonly currentAttempt: number,
    readonly reportedAttempt: number,
  ) {
    super(
      `${commandType} for execution ${executionId} reports attempt ${reportedAttempt}; the current attempt is ${currentAttempt}`,
    );
    this.name = 'StaleAttemptError';
  }
}

export class AttemptLimitReachedError extends DomainError {
  readonly kind = 'attempt_limit_reached' as const;

  constructor(
    readonly executionId: string,
    readonly attempts: number,
    readonly maxAttempts: number,
  ) {
    super(`execution ${executionId} has used ${attempts} of ${maxAttempts} attempts; it will not be dispatched again`);
    this.name = 'AttemptLimitReachedError';
  }
}

/** Invariant 2: a second dispatch only when the class's recovery rule says so. */
export class RedispatchNotAllowedError extends DomainError {
  readonly kind = 'redispatch_not_allowed' as const;

  constructor(
    readonly executionId: string,
    readonly operationClass: OperationClass,
    /** What recovery says to do instead. */
    readonly recoveryStep: RecoveryStepKind,
  ) {
    super(
      `execution ${executionId} (${operationClass}) may not be dispatched again after an unknown outcome; recovery step is ${recoveryStep}`,
    );
    this.name = 'RedispatchNotAllowedError';
  }
}

export class RetryNotMatchableError extends DomainError {
  readonly kind = 'retry_not_matchable' as const;

  constructor(
    readonly executionId: string | null,
    readonly status: ExecutionStatus,
    readonly reason: NewExecutionReason,
  ) {
    super(`a retry cannot attach to execution ${executionId ?? '(none)'} in state ${status}: ${reason}`);
    this.name = 'RetryNotMatchableError';
  }
}

/**
 * The same caller idempotency key arrived with a different canonical operation record (Stripe's and the IETF
 * draft's 422). Names the first execution so the caller can look it up.
 */
export class IdempotencyKeyConflictError extends DomainError {
  readonly kind = 'idempotency_key_conflict' as const;

  constructor(
    readonly firstExecutionId: string,
    readonly actor: string,
    readonly tool: string,
  ) {
    super(
      `idempotency key of ${actor} for ${tool} was first used by execution ${firstExecutionId} with different arguments`,
    );
    this.name = 'IdempotencyKeyConflictError';
  }
}

export class ExecutionIdMismatchError extends DomainError {
  readonly kind = 'execution_id_mismatch' as const;

  constructor(
    readonly commandType: ExecutionCommandType,
    readonly streamExecutionId: string,
    readonly commandExecutionId: string,
  ) {
    super(`${commandType} names execution ${commandExecutionId} but was decided on execution ${streamExecutionId}`);
    this.name = 'ExecutionIdMismatchError';
  }
}

/** Bad input in a command (invariant 6): nothing is appended. */
export class InvalidCommandError extends DomainError {
  readonly kind = 'invalid_command' as const;

  constructor(
    readonly commandType: ExecutionCommandType,
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${commandType}.${field}: ${reason}`);
    this.name = 'InvalidCommandError';
  }
}

export type IdentifierKind =
  | 'ulid'
  | 'execution_id'
  | 'fingerprint_digest'
  | 'idempotency_key_digest'
  | 'actor'
  | 'tool'
  | 'run_id'
  | 'session_id'
  | 'vault_name'
  | 'agent_name'
  | 'consumer';

export class InvalidIdentifierError extends DomainError {
  readonly kind = 'invalid_identifier' as const;

  constructor(
    readonly identifier: IdentifierKind,
    readonly reason: string,
  ) {
    super(`invalid ${identifier}: ${reason}`);
    this.name = 'InvalidIdentifierError';
  }
}
