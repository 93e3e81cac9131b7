import { DEFAULT_REDELIVERY_GRACE_MS } from './durations';

/**
 * Operation classes and what the gateway may do after an outcome is lost (docs/design.md section 6).
 * The contract declares the class; the HTTP method never decides it.
 */
export const OPERATION_CLASSES = [
  'read_only',
  'idempotent_write',
  'conditional_write',
  'irreversible',
  'remote_command',
] as const;

/** How a tool's call is recovered after an unknown outcome (docs/design.md section 6). */
export type OperationClass = (typeof OPERATION_CLASSES)[number];

export function isOperationClass(value: unknown): value is OperationClass {
  return typeof value === 'string' && (OPERATION_CLASSES as readonly string[]).includes(value);
}

/** What recovery does when an attempt was dispatched and no outcome came back. */
export type RecoveryAction =
  /** Send again within normal limits; repeating a read has no effect to double. */
  | 'redispatch'
  /** Send again with the same idempotency key (the execution id); the target deduplicates. */
  | 'redispatch_same_key'
  /** Run the contract's status query; send again only while the precondition still holds. */
  | 'query_status_then_decide'
  /** Probe the durable marker on the host; absent and marker-before-work lets it send again. */
  | 'probe_marker_then_decide'
  /** Stop: append ReviewRequired and tell the agent the outcome is unknown. */
  | 'hold_for_review';

export interface RecoveryPolicy {
  readonly operationClass: OperationClass;
  readonly afterUnknownOutcome: RecoveryAction;
  /** May a retry ever cause a second request to the target for the same execution? */
  readonly mayRedispatch: boolean;
  /**
   * How long a delivered result still answers a matching repeat (docs/design.md section 5, redelivery_grace): the
   * default in milliseconds when the contract names none, or `null` for the whole correlation window, which a
   * contract cannot shorten and a delivery record does not end: a repeat of such a call inside its window is
   * a retry unless the caller declares a new intent.
   */
  readonly redeliveryGraceDefaultMs: number | null;
  /** Annotation hints derived for MCP tool listings (docs/design.md section 7). */
  readonly annotations: {
    readonly readOnlyHint: boolean;
    readonly idempotentHint: boolean;
    readonly destructiveHint: boolean;
  };
}

export const RECOVERY_POLICIES: Readonly<Record<OperationClass, RecoveryPolicy>> = {
  read_only: {
    operationClass: 'read_only',
    afterUnknownOutcome: 'redispatch',
    mayRedispatch: true,
    redeliveryGraceDefaultMs: 0,
    annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
  },
  idempotent_write: {
    operationClass: 'idempotent_write',
    afterUnknownOutcome: 'redispatch_same_key',
    mayRedispatch: true,
    redeliveryGraceDefaultMs: DEFAULT_REDELIVERY_GRACE_MS,
    annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: false },
  },
  conditional_write: {
    operationClass: 'conditional_write',
    afterUnknownOutcome: 'query_status_then_decide',
    mayRedispatch: true,
    redeliveryGraceDefaultMs: null,
    annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
  },
  irreversible: {
    operationClass: 'irreversible',
    afterUnknownOutcome: 'hold_for_review',
    mayRedispatch: false,
    redeliveryGraceDefaultMs: null,
    annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: true },
  },
  remote_command: {
    operationClass: 'remote_command',
    afterUnknownOutcome: 'probe_marker_then_decide',
    mayRedispatch: true,
    redeliveryGraceDefaultMs: null,
    annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: true },
  },
};

/** True when a repeat inside the correlation window attaches whatever the delivery record says. */
export function retriesForWholeWindow(operationClass: OperationClass): boolean {
  return RECOVERY_POLICIES[operationClass].redeliveryGraceDefaultMs === null;
}

export function recoveryPolicyOf(operationClass: OperationClass): RecoveryPolicy {
  return RECOVERY_POLICIES[operationClass];
}
