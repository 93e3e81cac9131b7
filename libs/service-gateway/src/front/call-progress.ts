import { progressWords, recoveryPolicyOf, type ExecutionState, type RecoveryAction } from '@oncegate/domain';

/** What a waiting call reports of its execution's state; one call per state it sees while it waits. */
export type CallProgress = (state: ExecutionState) => void;

/** A `notifications/progress` for the request that asked with `progressToken`. */
export type ProgressNotifier = (notification: { method: 'notifications/progress'; params: Record<string, unknown> }) => Promise<void>;

/**
 * Progress for one call that carries a `progressToken`: a notification for each step that takes time, said once
 * (a state seen again with nothing new is not repeated). `progress` counts the steps; no total is given, since
 * how many steps an execution takes is not known in advance. A notification that cannot be sent (the client went
 * away) changes nothing of the call.
 */
export function progressReporter(progressToken: string | number, notify: ProgressNotifier): CallProgress {
  let last: string | undefined;
  let progress = 0;
  return (state) => {
    const message = progressMessage(state);
    if (message === undefined || message === last) return;
    last = message;
    progress += 1;
    notify({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => undefined);
  };
}

/** What an agent is told while its call waits in `state`; `undefined` for a state that does not wait. */
export function progressMessage(state: ExecutionState): string | undefined {
  const id = state.executionId;
  switch (state.status) {
    case 'accepted':
      return `execution ${id}: accepted, being authorized`;
    case 'awaiting_approval': {
      const approval = state.approval;
      const until = approval?.expiresAt ? `denied unless decided by ${approval.expiresAt}` : 'no deadline';
      return (
        `execution ${id}: awaiting approval by a person with the approver role (asked by ${approval?.requestedBy ?? 'policy'}` +
        `${approval?.reason ? `: ${approval.reason}` : ''}); ${until}`
      );
    }
    case 'authorized':
      return `execution ${id}: authorized, about to be sent`;
    case 'dispatched': {
      const reported = state.attemptProgress?.attempt === state.attempts ? state.attemptProgress : null;
      if (reported === null) return `execution ${id}: dispatched (attempt ${state.attempts}), awaiting the target's answer`;
      return `execution ${id}: dispatched (attempt ${state.attempts}), ${progressWords(reported)}`;
    }
    case 'outcome_unknown': {
      const action = state.accepted === null ? 'hold_for_review' : recoveryPolicyOf(state.accepted.operationClass).afterUnknownOutcome;
      return `execution ${id}: outcome of attempt ${state.attempts} unknown, checking (${CHECKS[action]})`;
    }
    default:
      return undefined;
  }
}

const CHECKS: Readonly<Record<RecoveryAction, string>> = {
  redispatch: 'a read: it may be sent again',
  redispatch_same_key: 'sent again with the same idempotency key',
  query_status_then_decide: "running the contract's status query",
  probe_marker_then_decide: 'probing the durable marker on the host',
  hold_for_review: 'held for a person to review; never sent again by the gateway',
};
