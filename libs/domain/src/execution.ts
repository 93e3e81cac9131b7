/**
 * The execution decider (docs/design.md section 4): `initialState`, `decide` and `evolve`. `decide` turns a command and
 * the folded state into event payloads, or throws a typed error; `evolve` folds one event into the state. Both are
 * pure: the clock and ids arrive in the command, metadata is added by whoever appends.
 */
import type { ExecutionCommand, ExecutionCommandType, RecordAnswer, RecordAttemptProgress, RecordAttemptTask } from './commands';
import { addMs, isBefore, isDurationMs, isIsoInstant, type IsoInstant } from './durations';
import {
  AttemptLimitReachedError,
  ExecutionIdMismatchError,
  IllegalTransitionError,
  InvalidCommandError,
  RedispatchNotAllowedError,
  RetryNotMatchableError,
  StaleAttemptError,
  type IllegalTransitionRule,
} from './errors';
import {
  executionEvent,
  formatIntentScope,
  type AnswerTold,
  type AuthorizationBasis,
  type DenialBasis,
  type ExecutionEvent,
  type ReviewReason,
  type ReviewResolvedData,
  type TaskFinding,
} from './events';
import {
  answeredWithError,
  DEFINITE_OUTCOME_STATUSES,
  EXECUTION_STATUSES,
  initialState,
  PRE_DISPATCH_STATUSES,
  statusIn,
  UNSETTLED_STATUSES,
  type AcceptedFacts,
  type ExecutionState,
  type ExecutionStatus,
  type ReviewFacts,
} from './execution-state';
import { isFingerprint } from './fingerprint-value';
import { EXPIRABLE, matchRetry, retryReturnOf } from './matching';
import { isOperationClass } from './operation-class';
import { awaitsLateReport, earlierAttemptMayHaveActed, nextRecoveryStep } from './recovery';
import { isExecutionId, type ExecutionId } from './streams';

export interface Decider<TCommand, TEvent, TState> {
  readonly initialState: () => TState;
  readonly evolve: (state: TState, event: TEvent) => TState;
  readonly decide: (command: TCommand, state: TState) => TEvent[];
}

export function evolve(state: ExecutionState, event: ExecutionEvent): ExecutionState {
  switch (event.type) {
    case 'ExecutionAccepted': {
      const { data } = event;
      return {
        ...state,
        status: 'accepted',
        executionId: data.executionId,
        accepted: {
          actor: data.record.actor,
          toolName: data.toolName,
          fingerprint: data.fingerprint,
          operationClass: data.operationClass,
          intentScope: data.intentScope,
          windowEndsAt: data.windowEndsAt,
          redeliveryGraceMs: data.redeliveryGraceMs,
          attemptPolicy: data.attemptPolicy,
          acceptedAt: data.acceptedAt,
          channel: data.record.channel,
          argumentsRef: data.argumentsRef,
          runId: data.runId ?? null,
        },
      };
    }
    case 'RetryAttached':
      // After a review found the last attempt not executed, the agent's retry is what sends the next one.
      return {
        ...state,
        status: state.status === 'not_executed' ? 'authorized' : state.status,
        retriesAttached: state.retriesAttached + 1,
      };
    case 'ApprovalRequested':
      return {
        ...state,
        status: 'awaiting_approval',
        approval: {
          decision: 'pending',
          scope: event.data.scope ?? 'execution',
          runId: event.data.runId ?? null,
          expiresAt: event.data.expiresAt ?? null,
          requestedBy: event.data.requestedBy,
          requestedAt: event.data.requestedAt,
          decidedBy: null,
          reason: event.data.reason,
        },
      };
    case 'ApprovalGranted':
    case 'ApprovalDenied':
      return {
        ...state,
        approval: {
          decision: event.type === 'ApprovalGranted' ? 'granted' : 'denied',
          scope: state.approval?.scope ?? 'execution',
          runId: state.approval?.runId ?? null,
          expiresAt: state.approval?.expiresAt ?? null,
          requestedBy: state.approval?.requestedBy ?? event.data.by,
          requestedAt: state.approval?.requestedAt ?? event.data.decidedAt,
          decidedBy: event.data.by,
          reason: event.data.reason,
        },
      };
    case 'ExecutionAuthorized':
      return { ...state, status: 'authorized', authorization: { ...event.data } };
    case 'ExecutionDenied':
      return { ...state, status: 'denied', denial: { ...event.data } };
    case 'Dispatched': {
      const { attempt, dispatcherId, dispatchedAt } = event.data;
      return {
        ...state,
        status: 'dispatched',
        attempts: attempt,
        firstDispatchedAt: state.firstDispatchedAt ?? dispatchedAt,
        lastDispatch: { attempt, dispatcherId, dispatchedAt },
      };
    }
    case 'AttemptProgressed':
      // Evidence of an attempt in flight: what a waiting agent is told changes, the execution's state does not.
      return { ...state, attemptProgress: { ...event.data } };
    case 'OutcomeObserved':
      // The target answered (or its marker did): completed, whatever the answer; an error answer is told with
      // isError. Only an attempt that sent nothing is a failure. Journals written when an error answer folded to
      // `failed` hold the same events and now fold to this.
      return {
        ...state,
        status: event.data.source === 'not_sent' ? 'failed' : 'completed',
        outcome: { ...event.data },
      };
    case 'OutcomeUnknown':
      return { ...state, status: 'outcome_unknown', unknownOutcome: { ...event.data } };
    case 'AttemptTaskStarted':
      return { ...state, attemptTask: { ...event.data } };
    case 'AttemptTaskChecked':
      return { ...state, taskCheck: { ...event.data } };
    case 'StatusQueried':
      return { ...state, statusQuery: { ...event.data } };
    case 'MarkerProbed':
      return { ...state, markerProbe: { ...event.data } };
    case 'ReviewRequired':
      return {
        ...state,
        status: 'needs_review',
        review: { ...event.data, resolution: null, resolvedBy: null, resolvedAt: null, resend: null },
      };
    case 'ReviewResolved': {
      const { resolution, by, resolvedAt } = event.data;
      // A second not_executed with resend (confirming or asking again) keeps who found it not executed, and when.
      const review =
        state.status === 'not_executed'
          ? state.review
          : state.review && { ...state.review, resolution, resolvedBy: by, resolvedAt, resend: null };
      switch (resolution) {
        case 'completed':
          return {
            ...state,
            status: 'completed',
            review,
            outcome: {
              attempt: state.attempts,
              outcome: 'succeeded',
              source: 'review',
              targetStatus: null,
              exitCode: null,
              resultRef: null,
              resultDigest: null,
              observedAt: resolvedAt,
            },
          };
        case 'not_executed':
          return notExecuted(state, review, event.data);
        case 'abandoned':
          return { ...state, status: 'abandoned', review };
        default:
          return assertNever(resolution);
      }
    }
    case 'ResultDelivered':
      return {
        ...state,
        status: state.status === 'failed' ? 'failed' : 'delivered',
        delivery: {
          last: 'delivered',
          lastAt: event.data.deliveredAt,
          lastDeliveredAt: event.data.deliveredAt,
          deliveries: (state.delivery?.deliveries ?? 0) + 1,
        },
      };
    case 'ResultDeliveryFailed':
      return {
        ...state,
        status: state.status === 'failed' ? 'failed' : 'completed_result_not_delivered',
        delivery: {
          last: 'failed',
          lastAt: event.data.failedAt,
          lastDeliveredAt: state.delivery?.lastDeliveredAt ?? null,
          deliveries: state.delivery?.deliveries ?? 0,
        },
      };
    case 'AnswerGiven':
      // What the agent was told is evidence about the call, not a step of the execution.
      return state;
    case 'ExecutionCancelled':
      return { ...state, status: 'cancelled', cancelledAt: event.data.cancelledAt };
    case 'CancellationRequested':
      return { ...state, cancellationRequests: state.cancellationRequests + 1 };
    case 'ExecutionExpired':
      return { ...state, status: 'expired', expiredAt: event.data.expiredAt };
    default:
      return assertNever(event);
  }
}

/**
 * A review found the last attempt not executed. Nothing is sent on that alone: the execution waits in `not_executed`
 * for the agent's retry. With `resend` it is `authorized` at once (a dispatcher sends the next attempt), except for
 * an irreversible call, whose resend needs a second operator: the first resend only asks, and one by another
 * operator sends it.
 */
function notExecuted(state: ExecutionState, review: ReviewFacts | null, data: ReviewResolvedData): ExecutionState {
  if (data.resend !== true || review === null) return { ...state, status: 'not_executed', review };
  const asked = review.resend;
  if (state.accepted?.operationClass === 'irreversible' && (asked === null || asked.requestedBy === data.by)) {
    return { ...state, status: 'not_executed', review: { ...review, resend: { requestedBy: data.by, requestedAt: data.resolvedAt, confirmedBy: null } } };
  }
  const resend =
    asked === null
      ? { requestedBy: data.by, requestedAt: data.resolvedAt, confirmedBy: null }
      : { ...asked, confirmedBy: state.accepted?.operationClass === 'irreversible' ? data.by : asked.confirmedBy };
  return { ...state, status: 'authorized', review: { ...review, resend } };
}

export function decide(command: ExecutionCommand, state: ExecutionState): ExecutionEvent[] {
  if (!isIsoInstant(command.now)) {
    throw new InvalidCommandError(command.type, 'now', 'expected an ISO-8601 instant with a zone');
  }
  if (command.type === 'AcceptExecution') return decideAccept(command, state);

  const refuse = (rule: IllegalTransitionRule): IllegalTransitionError =>
    new IllegalTransitionError(command.type, state.status, state.executionId, rule);
  const accepted = state.accepted;
  const executionId = state.executionId;
  if (!accepted || !executionId) throw refuse('execution_not_accepted');
  if (command.executionId !== executionId) {
    throw new ExecutionIdMismatchError(command.type, executionId, command.executionId);
  }
  const { now } = command;

  switch (command.type) {
    case 'AttachRetry': {
      const match = matchRetry({ prior: state, now, newIntent: false });
      if (match.kind === 'new_execution') throw new RetryNotMatchableError(executionId, state.status, match.reason);
      const { returned, replayed } = retryReturnOf(match.action);
      return [executionEvent('RetryAttached', { correlation: command.correlation, returned, replayed, attachedAt: now })];
    }

    case 'RequestApproval':
      if (state.status === 'awaiting_approval') throw refuse('approval_already_requested');
      if (state.status !== 'accepted') throw refuse('state_does_not_allow');
      requireText(command.type, 'requestedBy', command.requestedBy);
      if (command.scope === 'run' && !state.accepted?.runId) throw new InvalidCommandError(command.type, 'scope', 'a run grant needs an execution that belongs to a run');
      return [
        executionEvent('ApprovalRequested', {
          requestedBy: command.requestedBy,
          reason: command.reason,
          requestedAt: now,
          scope: command.scope ?? 'execution',
          runId: state.accepted?.runId ?? null,
          expiresAt: command.expiresAt ?? null,
        }),
      ];

    case 'GrantApproval':
    case 'DenyApproval': {
      if (state.status !== 'awaiting_approval') throw refuse('state_does_not_allow');
      if (state.approval?.decision !== 'pending') throw refuse('approval_not_pending');
      requireText(command.type, 'by', command.by);
      const data = { by: command.by, reason: command.reason, decidedAt: now };
      return [
        command.type === 'GrantApproval'
          ? executionEvent('ApprovalGranted', data)
          : executionEvent('ApprovalDenied', data),
      ];
    }

    case 'AuthorizeExecution': {
      const rule = authorizationRefusal(state, command.basis);
      if (rule) throw refuse(rule);
      return [executionEvent('ExecutionAuthorized', { basis: command.basis, authorizedAt: now })];
    }

    case 'DenyExecution': {
      const rule = denialRefusal(state, command.basis);
      if (rule) throw refuse(rule);
      return [executionEvent('ExecutionDenied', { basis: command.basis, reason: command.reason, deniedAt: now })];
    }

    case 'RecordDispatch': {
      requireText(command.type, 'dispatcherId', command.dispatcherId);
      if (state.status === 'authorized') {
        // Once the window has ended a retry may already have started a new execution; this one must not send.
        if (windowHasEnded(accepted, now)) throw refuse('window_ended');
      } else if (state.status === 'outcome_unknown') {
        const step = nextRecoveryStep(state, now);
        if (step.kind === 'hold_for_review' && step.reason === 'attempt_limit_reached') {
          throw new AttemptLimitReachedError(executionId, state.attempts, accepted.attemptPolicy.maxAttempts);
        }
        if (step.kind !== 'redispatch_same_key') {
          throw new RedispatchNotAllowedError(executionId, accepted.operationClass, step.kind);
        }
      } else {
        throw refuse('state_does_not_allow');
      }
      return [
        executionEvent('Dispatched', {
          attempt: state.attempts + 1,
          dispatcherId: command.dispatcherId,
          idempotencyKey: executionId,
          dispatchedAt: now,
        }),
      ];
    }

    case 'ObserveOutcome': {
      if (state.status === 'dispatched') {
        requireCurrentAttempt(command.type, executionId, state, command.attempt);
        if (command.source !== 'response' && command.source !== 'not_sent') throw refuse('wrong_outcome_source');
        if (command.source === 'not_sent') {
          // Nothing left: the only outcome it can prove is a failure, and it says why.
          if (command.outcome !== 'failed') throw new InvalidCommandError(command.type, 'outcome', "a 'not_sent' outcome is 'failed'");
          requireText(command.type, 'notSentReason', command.notSentReason ?? '');
          // An earlier attempt may have acted: this attempt's failure to send says nothing of the execution.
          if (earlierAttemptMayHaveActed(state)) throw refuse('outcome_not_proven');
        }
      } else if (command.source === 'response' && awaitsLateReport(state, command.attempt)) {
        // The attempt's own answer, after another instance gave it up for lost: the answer is the evidence.
      } else if (state.status === 'outcome_unknown') {
        requireCurrentAttempt(command.type, executionId, state, command.attempt);
        if (command.source !== 'marker' && command.source !== 'task') throw refuse('wrong_outcome_source');
        const step = nextRecoveryStep(state, now);
        // A marker proves exactly the outcome it records; the attempt's own task, resumed, gives the target's answer.
        const proven =
          command.source === 'task'
            ? step.kind === 'resume_task'
            : step.kind === 'report_outcome_from_marker' && step.outcome === command.outcome && step.exitStatus === command.exitCode;
        if (!proven) throw refuse('outcome_not_proven');
      } else {
        throw refuse('state_does_not_allow');
      }
      requireOptionalInteger(command.type, 'targetStatus', command.targetStatus);
      requireOptionalInteger(command.type, 'exitCode', command.exitCode);
      return [
        executionEvent('OutcomeObserved', {
          attempt: command.attempt,
          outcome: command.outcome,
          source: command.source,
          targetStatus: command.targetStatus,
          exitCode: command.exitCode,
          resultRef: command.resultRef,
          resultDigest: command.resultDigest,
          observedAt: now,
          ...(command.source === 'not_sent' ? { notSentReason: command.notSentReason! } : {}),
        }),
      ];
    }

    case 'RecordUnknownOutcome':
      if (state.status !== 'dispatched') throw refuse('state_does_not_allow');
      requireCurrentAttempt(command.type, executionId, state, command.attempt);
      return [executionEvent('OutcomeUnknown', { attempt: command.attempt, reason: command.reason, observedAt: now })];

    case 'RecordAttemptTask': {
      if (state.status !== 'dispatched') throw refuse('state_does_not_allow');
      requireCurrentAttempt(command.type, executionId, state, command.attempt);
      // One task per attempt: the reference recovery resumes is the one the target first gave.
      if (state.attemptTask?.attempt === command.attempt) throw refuse('state_does_not_allow');
      requireTaskReference(command);
      return [executionEvent('AttemptTaskStarted', { attempt: command.attempt, task: command.task, startedAt: now })];
    }

    case 'RecordTaskCheck':
      if (state.status !== 'outcome_unknown') throw refuse('state_does_not_allow');
      requireCurrentAttempt(command.type, executionId, state, command.attempt);
      // Only the step recovery is at: a task recorded for this attempt and not resumed yet.
      if (nextRecoveryStep(state, now).kind !== 'resume_task') throw refuse('evidence_not_applicable');
      if (!TASK_FINDINGS.has(command.finding)) throw new InvalidCommandError(command.type, 'finding', `expected one of ${[...TASK_FINDINGS].join(', ')}`);
      requireText(command.type, 'reason', command.reason);
      return [executionEvent('AttemptTaskChecked', { attempt: command.attempt, finding: command.finding, reason: command.reason.slice(0, 200), checkedAt: now })];

    case 'RecordStatusQuery':
      if (state.status !== 'outcome_unknown' && state.status !== 'needs_review') throw refuse('state_does_not_allow');
      if (accepted.operationClass !== 'conditional_write') throw refuse('evidence_not_applicable');
      requireCurrentAttempt(command.type, executionId, state, command.attempt);
      return [
        executionEvent('StatusQueried', {
          attempt: command.attempt,
          preconditionHolds: command.preconditionHolds,
          observedStatus: command.observedStatus,
          queriedAt: now,
        }),
      ];

    case 'RecordMarkerProbe':
      if (state.status !== 'outcome_unknown' && state.status !== 'needs_review') throw refuse('state_does_not_allow');
      if (accepted.operationClass !== 'remote_command') throw refuse('evidence_not_applicable');
      requireCurrentAttempt(command.type, executionId, state, command.attempt);
      requireOptionalInteger(command.type, 'exitStatus', command.exitStatus);
      if (command.markerAttempt !== undefined) requireOptionalInteger(command.type, 'markerAttempt', command.markerAttempt);
      if (command.marker === 'probe_failed') requireText(command.type, 'failure', command.failure ?? '');
      return [
        executionEvent('MarkerProbed', {
          attempt: command.attempt,
          marker: command.marker,
          exitStatus: command.exitStatus,
          probedAt: now,
          ...(command.markerAttempt !== undefined ? { markerAttempt: command.markerAttempt } : {}),
          ...(command.marker === 'probe_failed' ? { failure: command.failure! } : {}),
          ...(command.keptOutput ? { keptOutput: command.keptOutput } : {}),
        }),
      ];

    case 'RequireReview':
      if (state.status !== 'outcome_unknown') throw refuse('state_does_not_allow');
      return [executionEvent('ReviewRequired', { attempt: state.attempts, reason: command.reason, requiredAt: now })];

    case 'ResolveReview': {
      const resend = command.resend === true;
      if (resend && command.resolution !== 'not_executed') {
        throw new InvalidCommandError(command.type, 'resend', "only a 'not_executed' resolution can be sent again");
      }
      if (state.status === 'not_executed') {
        // Resolved already: only a resend may follow (asked later, or an irreversible call's second operator).
        if (!resend) throw refuse('state_does_not_allow');
        const asked = state.review?.resend ?? null;
        if (accepted.operationClass === 'irreversible' && asked !== null && asked.requestedBy === command.by) {
          throw refuse('second_operator_required');
        }
      } else if (state.status !== 'needs_review') {
        throw refuse('state_does_not_allow');
      }
      requireText(command.type, 'by', command.by);
      // A resend after the window ended would be refused at dispatch and leave the execution stuck: refuse it here.
      if (resend && windowHasEnded(accepted, now)) throw refuse('window_ended');
      return [
        executionEvent('ReviewResolved', {
          resolution: command.resolution,
          by: command.by,
          reason: command.reason,
          resolvedAt: now,
          ...(resend ? { resend: true } : {}),
        }),
      ];
    }

    case 'RecordResultDelivered':
      if (!statusIn(state.status, DEFINITE_OUTCOME_STATUSES)) throw refuse('no_definite_outcome');
      requireText(command.type, 'evidence', command.evidence);
      return [
        executionEvent('ResultDelivered', {
          correlation: command.correlation,
          replayed: command.replayed,
          deliveredAt: now,
          evidence: command.evidence,
          ...(command.told === undefined ? {} : { told: toldOf(command.type, command.told) }),
        }),
      ];

    case 'RecordResultDeliveryFailed':
      if (!statusIn(state.status, DEFINITE_OUTCOME_STATUSES)) throw refuse('no_definite_outcome');
      return [
        executionEvent('ResultDeliveryFailed', {
          correlation: command.correlation,
          reason: command.reason,
          failedAt: now,
          ...(command.told === undefined ? {} : { told: toldOf(command.type, command.told) }),
        }),
      ];

    case 'RecordAttemptProgress': {
      if (state.status !== 'dispatched') throw refuse('state_does_not_allow');
      requireCurrentAttempt(command.type, executionId, state, command.attempt);
      requireProgress(command);
      return [
        executionEvent('AttemptProgressed', {
          attempt: command.attempt,
          progress: command.progress,
          total: command.total,
          message: command.message === null ? null : command.message.slice(0, 200),
          reportedAt: now,
        }),
      ];
    }

    case 'RecordAnswer':
      return [answerEvent(command, state)];

    case 'CancelExecution':
      if (state.attempts > 0) throw refuse('already_dispatched');
      if (!statusIn(state.status, PRE_DISPATCH_STATUSES)) throw refuse('state_does_not_allow');
      return [
        executionEvent('ExecutionCancelled', {
          trigger: command.trigger,
          correlation: command.correlation,
          cancelledAt: now,
        }),
      ];

    case 'RequestCancellation': {
      // A cancel withdraws its own caller; the execution ends only when nobody else still wants it.
      const beforeDispatch = state.attempts === 0 && statusIn(state.status, PRE_DISPATCH_STATUSES) && command.otherCallersWaiting !== true;
      const data = { trigger: command.trigger, correlation: command.correlation };
      return [
        beforeDispatch
          ? executionEvent('ExecutionCancelled', { ...data, cancelledAt: now })
          : executionEvent('CancellationRequested', { ...data, requestedAt: now }),
      ];
    }

    case 'ExpireExecution': {
      if (statusIn(state.status, UNSETTLED_STATUSES)) throw refuse('execution_unsettled');
      if (!statusIn(state.status, EXPIRABLE)) throw refuse('state_does_not_allow');
      const windowEndsAt = accepted.windowEndsAt;
      if (windowEndsAt === null) throw refuse('window_unbounded');
      if (isBefore(now, windowEndsAt)) throw refuse('window_still_open');
      return [executionEvent('ExecutionExpired', { windowEndedAt: windowEndsAt, expiredAt: now })];
    }

    default:
      return assertNever(command);
  }
}

/**
 * The event an answer is recorded as. An answer that told a definite outcome, of an execution that still has one, is a
 * result: proven delivered it is `ResultDelivered`, refused it is `ResultDeliveryFailed` — the two that move the
 * execution to `delivered` / `completed_result_not_delivered`. Everything else (an answer still in progress, a denial,
 * an unknown outcome, a review hold, and any answer whose delivery nothing proved) is `AnswerGiven`, which moves nothing.
 */
function answerEvent(command: RecordAnswer, state: ExecutionState): ExecutionEvent {
  const told = toldOf(command.type, command.told);
  const { correlation, delivery, now } = command;
  const result = statusIn(told.state, DEFINITE_OUTCOME_STATUSES) && statusIn(state.status, DEFINITE_OUTCOME_STATUSES);
  switch (delivery.kind) {
    case 'delivered':
      requireText(command.type, 'delivery.evidence', delivery.evidence);
      return result
        ? executionEvent('ResultDelivered', { correlation, replayed: told.replayed, deliveredAt: now, evidence: delivery.evidence, told })
        : executionEvent('AnswerGiven', { correlation, told, delivery: 'delivered', evidence: delivery.evidence, settledAt: now });
    case 'not_delivered':
      requireText(command.type, 'delivery.reason', delivery.reason);
      return result
        ? executionEvent('ResultDeliveryFailed', { correlation, reason: delivery.reason, failedAt: now, told })
        : executionEvent('AnswerGiven', { correlation, told, delivery: 'not_delivered', reason: delivery.reason, settledAt: now });
    case 'unproven': {
      const reason = delivery.reason?.trim() ? { reason: delivery.reason } : {};
      return executionEvent('AnswerGiven', { correlation, told, delivery: 'unproven', ...reason, settledAt: now });
    }
    default:
      return assertNever(delivery);
  }
}

/** What an answer told, checked and copied field by field, so an event carries nothing its type does not declare. */
function toldOf(commandType: ExecutionCommandType, told: AnswerTold): AnswerTold {
  const invalid = (field: string, reason: string) => new InvalidCommandError(commandType, `told.${field}`, reason);
  if (!(EXECUTION_STATUSES as readonly string[]).includes(told.state) || told.state === 'initial') {
    throw invalid('state', 'expected the state of an accepted execution');
  }
  for (const flag of ['isError', 'attached', 'replayed'] as const) {
    if (typeof told[flag] !== 'boolean') throw invalid(flag, 'expected a boolean');
  }
  if (!Number.isSafeInteger(told.attempts) || told.attempts < 0) throw invalid('attempts', 'expected a whole number of at least 0');
  if (!isIsoInstant(told.givenAt)) throw invalid('givenAt', 'expected an ISO-8601 instant with a zone');
  if (told.via !== undefined && told.via !== 'task' && told.via !== 'task_result') throw invalid('via', "expected 'task' or 'task_result'");
  return {
    state: told.state,
    isError: told.isError,
    attempts: told.attempts,
    attached: told.attached,
    replayed: told.replayed,
    givenAt: told.givenAt,
    ...(told.via === undefined ? {} : { via: told.via }),
  };
}

function decideAccept(command: Extract<ExecutionCommand, { type: 'AcceptExecution' }>, state: ExecutionState) {
  if (state.status !== 'initial') {
    throw new IllegalTransitionError(command.type, state.status, state.executionId, 'execution_already_accepted');
  }
  const invalid = (field: string, reason: string) => new InvalidCommandError(command.type, field, reason);
  if (!isExecutionId(command.executionId)) throw invalid('executionId', 'expected ex_ followed by a ULID');
  if (!isFingerprint(command.fingerprint)) throw invalid('fingerprint', 'expected hmac-sha256:<key-id>:<64 hex>');
  if (!isOperationClass(command.operationClass)) throw invalid('operationClass', 'not an operation class');
  requireText(command.type, 'record.actor', command.record.actor);
  requireText(command.type, 'record.tool', command.record.tool);
  if (formatIntentScope(command.intentScope) !== command.record.intent_scope) {
    throw invalid('intentScope', 'does not match record.intent_scope');
  }
  if (command.correlationWindowMs !== null && !isDurationMs(command.correlationWindowMs)) {
    throw invalid('correlationWindowMs', 'expected whole non-negative milliseconds or null');
  }
  if (command.redeliveryGraceMs !== null && !isDurationMs(command.redeliveryGraceMs)) {
    throw invalid('redeliveryGraceMs', 'expected whole non-negative milliseconds or null');
  }
  const { maxAttempts, attemptTimeoutMs, markerBeforeWork } = command.attemptPolicy;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) {
    throw invalid('attemptPolicy.maxAttempts', 'expected a whole number of at least 1');
  }
  if (!isDurationMs(attemptTimeoutMs) || attemptTimeoutMs === 0) {
    throw invalid('attemptPolicy.attemptTimeoutMs', 'expected whole positive milliseconds');
  }
  if (typeof markerBeforeWork !== 'boolean') throw invalid('attemptPolicy.markerBeforeWork', 'expected a boolean');

  const windowEndsAt = command.correlationWindowMs === null ? null : addMs(command.now, command.correlationWindowMs);
  return [
    executionEvent('ExecutionAccepted', {
      executionId: command.executionId,
      record: command.record,
      fingerprint: command.fingerprint,
      operationClass: command.operationClass,
      intentScope: command.intentScope,
      toolName: command.record.tool,
      windowEndsAt,
      redeliveryGraceMs: command.redeliveryGraceMs,
      attemptPolicy: { maxAttempts, attemptTimeoutMs, markerBeforeWork },
      correlation: command.correlation,
      acceptedAt: command.now,
      argumentsRef: command.argumentsRef,
      runId: command.runId ?? null,
    }),
  ];
}

/** Which rule refuses this authorization basis in this state, if any. */
function authorizationRefusal(state: ExecutionState, basis: AuthorizationBasis): IllegalTransitionRule | null {
  switch (state.status) {
    case 'accepted':
      // A per-use approval needs an ApprovalGranted first.
      return basis === 'per_use_approval' ? 'approval_not_granted' : null;
    case 'awaiting_approval':
      if (state.approval?.decision !== 'granted') return 'approval_not_granted';
      return basis === 'policy' ? 'basis_not_applicable' : null;
    default:
      return 'state_does_not_allow';
  }
}

/** Which rule refuses this denial basis in this state, if any. */
function denialRefusal(state: ExecutionState, basis: DenialBasis): IllegalTransitionRule | null {
  const approval = state.approval?.decision;
  switch (state.status) {
    case 'accepted':
      return basis === 'approval_denied' || basis === 'approval_timeout' || basis === 'approval_invalidated' ? 'basis_not_applicable' : null;
    case 'awaiting_approval':
      if (basis === 'approval_denied') return approval === 'denied' ? null : 'approval_not_denied';
      if (basis === 'approval_timeout' || basis === 'approval_invalidated') return approval === 'pending' ? null : 'approval_not_pending';
      return null;
    case 'authorized':
      // Found out before sending (e.g. the vault locked, the credential vanished); nothing has left.
      return basis === 'approval_denied' || basis === 'approval_timeout' || basis === 'approval_invalidated' ? 'basis_not_applicable' : null;
    default:
      return 'state_does_not_allow';
  }
}

function windowHasEnded(accepted: AcceptedFacts, now: IsoInstant): boolean {
  return accepted.windowEndsAt !== null && !isBefore(now, accepted.windowEndsAt);
}

function requireCurrentAttempt(
  commandType: ExecutionCommandType,
  executionId: ExecutionId,
  state: ExecutionState,
  attempt: number,
): void {
  if (attempt !== state.attempts) throw new StaleAttemptError(commandType, executionId, state.attempts, attempt);
}

function requireText(commandType: ExecutionCommandType, field: string, value: string): void {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new InvalidCommandError(commandType, field, 'expected a non-empty string');
  }
}

function requireOptionalInteger(commandType: ExecutionCommandType, field: string, value: number | null): void {
  if (value !== null && !Number.isSafeInteger(value)) {
    throw new InvalidCommandError(commandType, field, 'expected a whole number or null');
  }
}

function assertNever(value: never): never {
  throw new TypeError(`unexpected value ${JSON.stringify(value)}`);
}

export function foldExecution(events: readonly ExecutionEvent[]): ExecutionState {
  return events.reduce(evolve, initialState());
}

export const executionDecider: Decider<ExecutionCommand, ExecutionEvent, ExecutionState> = {
  initialState,
  evolve,
  decide,
};

/** What the agent is told about an execution (docs/design.md section 9), straight from the folded state. */
export interface ExecutionStatusView {
  readonly executionId: ExecutionId | null;
  readonly state: ExecutionStatus;
  readonly attempts: number;
  readonly firstDispatchedAt: IsoInstant | null;
  readonly targetStatus: number | null;
  readonly exitCode: number | null;
  /** The target's definite answer was an error (state `completed`); see `answeredWithError`. */
  readonly errorAnswer: boolean;
  readonly resultRef: string | null;
  readonly denialBasis: DenialBasis | null;
  readonly reviewReason: ReviewReason | null;
}

export function executionStatusView(state: ExecutionState): ExecutionStatusView {
  return {
    executionId: state.executionId,
    state: state.status,
    attempts: state.attempts,
    firstDispatchedAt: state.firstDispatchedAt,
    targetStatus: state.outcome?.targetStatus ?? null,
    exitCode: state.outcome?.exitCode ?? null,
    errorAnswer: answeredWithError(state.outcome),
    resultRef: state.outcome?.resultRef ?? null,
    denialBasis: state.denial?.basis ?? null,
    reviewReason: state.review?.reason ?? null,
  };
}

/** The largest task reference recorded, serialised: a reference names a task, it does not carry its work. */
export const TASK_REFERENCE_MAX_BYTES = 2048;

const TASK_FINDINGS: ReadonlySet<TaskFinding> = new Set<TaskFinding>(['working', 'lost', 'unreachable']);

/** A task reference: a JSON object of at most 2 KiB. */
function requireTaskReference(command: RecordAttemptTask): void {
  const { task } = command;
  if (task === null || typeof task !== 'object' || Array.isArray(task)) throw new InvalidCommandError(command.type, 'task', 'expected a JSON object');
  let text: string | undefined;
  try {
    text = JSON.stringify(task);
  } catch {
    text = undefined;
  }
  if (text === undefined) throw new InvalidCommandError(command.type, 'task', 'expected a JSON object');
  if (new TextEncoder().encode(text).length > TASK_REFERENCE_MAX_BYTES) {
    throw new InvalidCommandError(command.type, 'task', `expected at most ${TASK_REFERENCE_MAX_BYTES} bytes as JSON`);
  }
}

/** A progress report's numbers: finite, not negative, a total not below the progress. */
function requireProgress(command: RecordAttemptProgress): void {
  const finite = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value >= 0;
  if (!finite(command.progress)) throw new InvalidCommandError(command.type, 'progress', 'expected a finite number >= 0');
  if (command.total !== null && (!finite(command.total) || command.total < command.progress)) {
    throw new InvalidCommandError(command.type, 'total', 'expected null or a finite number not below progress');
  }
  if (command.message !== null && typeof command.message !== 'string') throw new InvalidCommandError(command.type, 'message', 'expected a string or null');
}
