import { describe, expect, it } from 'vitest';
import type { ExecutionCommand } from './commands';
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
import { EXECUTION_EVENT_SCHEMA_VERSIONS } from './events';
import { decide, executionDecider, executionStatusView, foldExecution } from './execution';
import { initialState, type ExecutionState } from './execution-state';
import {
  acceptExecution,
  accepted,
  answered,
  at,
  attachRetry,
  ATTEMPT_TIMEOUT_MS,
  authorize,
  authorized,
  cancel,
  completed,
  delivered,
  deliveryFailed,
  denyApproval,
  denyExecution,
  dispatch,
  dispatched,
  expire,
  EXECUTION_ID,
  given,
  grantApproval,
  historyOf,
  markerProbe,
  MAX_ATTEMPTS,
  observe,
  OTHER_EXECUTION_ID,
  requestApproval,
  requestCancellation,
  requireReview,
  resolveReview,
  statusQuery,
  T0,
  TASK_REFERENCE,
  taskCheck,
  taskStarted,
  progressed,
  thrownBy,
  unknown,
  unknownOutcome,
  when,
  WINDOW_MS,
} from './test-support/execution-fixtures';

function expectIllegal(state: ExecutionState, command: ExecutionCommand, rule: IllegalTransitionRule): void {
  const error = thrownBy(() => decide(command, state));
  expect(error).toBeInstanceOf(IllegalTransitionError);
  expect(error).toMatchObject({
    kind: 'illegal_transition',
    commandType: command.type,
    status: state.status,
    executionId: state.executionId,
    rule,
  });
}

describe('given no stream', () => {
  const state = initialState();

  it('when an execution is accepted then ExecutionAccepted carries the record, class, scope, window end and correlation', () => {
    const { events, state: next } = when(state, acceptExecution());

    expect(events).toEqual([
      {
        type: 'ExecutionAccepted',
        schemaVersion: 1,
        data: {
          executionId: EXECUTION_ID,
          record: acceptExecution().record,
          fingerprint: acceptExecution().fingerprint,
          operationClass: 'idempotent_write',
          intentScope: { kind: 'run', runId: '5f8097' },
          toolName: 'deploy_release',
          windowEndsAt: '2026-07-22T10:05:00.000Z',
          redeliveryGraceMs: 60_000,
          attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 30_000, markerBeforeWork: true },
          correlation: { jsonRpcId: 1, sessionId: 'session-a', transport: 'streamable-http' },
          acceptedAt: T0,
          argumentsRef: 'sealed_arguments_1',
          runId: null,
        },
      },
    ]);
    expect(next.status).toBe('accepted');
    expect(next.executionId).toBe(EXECUTION_ID);
    expect(next.accepted).toMatchObject({ actor: 'agent:deploy-bot', toolName: 'deploy_release', attemptPolicy: { maxAttempts: 3 } });
    expect(next.attempts).toBe(0);
  });

  it('when accepted with an "until confirmed" window then the window has no end', () => {
    const { state: next } = when(state, acceptExecution({ correlationWindowMs: null }));
    expect(next.accepted?.windowEndsAt).toBeNull();
  });

  it('when any other command arrives then it is refused because nothing was accepted', () => {
    expectIllegal(state, authorize(), 'execution_not_accepted');
    expectIllegal(state, dispatch(), 'execution_not_accepted');
    expectIllegal(state, attachRetry(), 'execution_not_accepted');
  });

  it.each([
    ['now', acceptExecution({ now: 'yesterday' })],
    ['executionId', acceptExecution({ executionId: 'ex_not-a-ulid' })],
    ['fingerprint', acceptExecution({ fingerprint: 'sha256:abc' as never })],
    ['operationClass', acceptExecution({ operationClass: 'write' as never })],
    ['intentScope', acceptExecution({ intentScope: { kind: 'actor' } })],
    ['correlationWindowMs', acceptExecution({ correlationWindowMs: -1 })],
    ['redeliveryGraceMs', acceptExecution({ redeliveryGraceMs: 1.5 })],
    ['attemptPolicy.maxAttempts', acceptExecution({ attemptPolicy: { maxAttempts: 0, attemptTimeoutMs: 1, markerBeforeWork: false } })],
    ['attemptPolicy.attemptTimeoutMs', acceptExecution({ attemptPolicy: { maxAttempts: 1, attemptTimeoutMs: 0, markerBeforeWork: false } })],
    ['record.actor', acceptExecution({ record: { ...acceptExecution().record, actor: ' ' } })],
  ])('when accepted with a bad %s then a typed InvalidCommandError names the field', (field, command) => {
    const error = thrownBy(() => decide(command, state));
    expect(error).toBeInstanceOf(InvalidCommandError);
    expect(error).toMatchObject({ kind: 'invalid_command', commandType: 'AcceptExecution', field });
  });
});

describe('given an accepted execution', () => {
  const state = given(...accepted());

  it('when approval is requested then the execution awaits approval with who asked and why', () => {
    const { events, state: next } = when(state, requestApproval());
    expect(events).toEqual([
      {
        type: 'ApprovalRequested',
        schemaVersion: 1,
        data: {
          requestedBy: 'policy:deploys-need-approval',
          reason: 'production deploy',
          requestedAt: at(100),
          scope: 'execution',
          runId: null,
          expiresAt: null,
        },
      },
    ]);
    expect(next.status).toBe('awaiting_approval');
    expect(next.approval).toMatchObject({ decision: 'pending', decidedBy: null, scope: 'execution' });
  });

  it('when a run grant is requested for an execution that belongs to no run then it is refused as invalid', () => {
    expect(() => decide(requestApproval({ scope: 'run' }), state)).toThrow(InvalidCommandError);
  });

  it('when a run grant is requested for an execution of a run then the request names the run and its deadline', () => {
    const inRun = when(initialState(), acceptExecution({ runId: 'run-7' })).state;
    const { events, state: next } = when(inRun, requestApproval({ scope: 'run', expiresAt: at(900) }));
    expect(events[0]?.data).toMatchObject({ scope: 'run', runId: 'run-7', expiresAt: at(900) });
    expect(next.approval).toMatchObject({ scope: 'run', runId: 'run-7', expiresAt: at(900) });
  });

  it('when a pending approval is invalidated by a vault unlock then it is denied with approval_invalidated', () => {
    const pending = when(state, requestApproval()).state;
    const { state: next } = when(pending, { type: 'DenyExecution', executionId: EXECUTION_ID, now: at(200), basis: 'approval_invalidated', reason: 'vault unlocked' });
    expect(next.status).toBe('denied');
    expect(next.denial?.basis).toBe('approval_invalidated');
  });

  it.each(['policy', 'session_grant'] as const)('when authorized on basis %s then it is authorized', (basis) => {
    const { events, state: next } = when(state, authorize(basis));
    expect(events).toEqual([{ type: 'ExecutionAuthorized', schemaVersion: 1, data: { basis, authorizedAt: at(300) } }]);
    expect(next.status).toBe('authorized');
    expect(next.authorization?.basis).toBe(basis);
  });

  it('when authorized by per-use approval without a grant then it is refused', () => {
    expectIllegal(state, authorize('per_use_approval'), 'approval_not_granted');
  });

  it.each(['policy', 'vault_locked', 'target_unresolved', 'credential_unresolved'] as const)(
    'when denied on basis %s then it is denied with that basis',
    (basis) => {
      const { events, state: next } = when(state, denyExecution(basis));
      expect(events[0]).toMatchObject({ type: 'ExecutionDenied', data: { basis, reason: 'not allowed' } });
      expect(next.status).toBe('denied');
      expect(next.denial?.basis).toBe(basis);
    },
  );

  it.each(['approval_denied', 'approval_timeout'] as const)(
    'when denied on basis %s without any approval then it is refused',
    (basis) => {
      expectIllegal(state, denyExecution(basis), 'basis_not_applicable');
    },
  );

  it('when the client cancels then it is cancelled', () => {
    const { events, state: next } = when(state, cancel());
    expect(events).toEqual([
      {
        type: 'ExecutionCancelled',
        schemaVersion: 1,
        data: { trigger: 'client_notification', correlation: { jsonRpcId: 1 }, cancelledAt: at(350) },
      },
    ]);
    expect(next.status).toBe('cancelled');
    expect(next.cancelledAt).toBe(at(350));
  });

  it('when cancellation is requested then, not yet dispatched, it is cancelled', () => {
    const { events, state: next } = when(state, requestCancellation());
    expect(events.map((event) => event.type)).toEqual(['ExecutionCancelled']);
    expect(next.status).toBe('cancelled');
  });

  it('when one caller cancels while another attached caller still waits, then only that caller is withdrawn', () => {
    const { events, state: next } = when(state, { ...requestCancellation(), otherCallersWaiting: true });
    expect(events.map((event) => event.type)).toEqual(['CancellationRequested']);
    expect(next).toMatchObject({ status: 'accepted', cancellationRequests: 1, cancelledAt: null });
  });

  it('when a retry attaches then RetryAttached says it continued and the state stays accepted', () => {
    const { events, state: next } = when(state, attachRetry());
    expect(events).toEqual([
      {
        type: 'RetryAttached',
        schemaVersion: 1,
        data: {
          correlation: { jsonRpcId: 7, sessionId: 'session-b' },
          returned: 'continued',
          replayed: false,
          attachedAt: at(1_000),
        },
      },
    ]);
    expect(next.status).toBe('accepted');
    expect(next.retriesAttached).toBe(1);
  });

  it('when dispatch is recorded before authorization then it is refused (nothing leaves unauthorized)', () => {
    expectIllegal(state, dispatch(), 'state_does_not_allow');
  });

  it('when it is accepted a second time then it is refused', () => {
    expectIllegal(state, acceptExecution(), 'execution_already_accepted');
  });

  it('when a command names another execution then a typed mismatch error carries both ids', () => {
    const error = thrownBy(() => decide({ ...authorize(), executionId: OTHER_EXECUTION_ID }, state));
    expect(error).toBeInstanceOf(ExecutionIdMismatchError);
    expect(error).toMatchObject({
      kind: 'execution_id_mismatch',
      commandType: 'AuthorizeExecution',
      streamExecutionId: EXECUTION_ID,
      commandExecutionId: OTHER_EXECUTION_ID,
    });
  });

  it('when a command carries no valid clock then it is refused as invalid', () => {
    const error = thrownBy(() => decide({ ...authorize(), now: '2026-07-22 10:00' }, state));
    expect(error).toBeInstanceOf(InvalidCommandError);
    expect(error).toMatchObject({ commandType: 'AuthorizeExecution', field: 'now' });
  });

  it('when it expires inside the window then it is refused', () => {
    expectIllegal(state, expire(at(WINDOW_MS - 1)), 'window_still_open');
  });

  it('when it expires at the window end then it is expired', () => {
    const { events, state: next } = when(state, expire(at(WINDOW_MS)));
    expect(events).toEqual([
      { type: 'ExecutionExpired', schemaVersion: 1, data: { windowEndedAt: at(WINDOW_MS), expiredAt: at(WINDOW_MS) } },
    ]);
    expect(next.status).toBe('expired');
  });

  it('when its window is "until confirmed" then it never expires', () => {
    expectIllegal(given(...accepted({ correlationWindowMs: null })), expire(at(10 * WINDOW_MS)), 'window_unbounded');
  });
});

describe('given an execution awaiting approval', () => {
  const state = given(...accepted(), requestApproval());

  it('when approval is requested again then it is refused (never a second prompt)', () => {
    expectIllegal(state, requestApproval(), 'approval_already_requested');
  });

  it('when approval is granted then the grant is recorded and the execution still awaits the verdict', () => {
    const { events, state: next } = when(state, grantApproval());
    expect(events).toEqual([
      {
        type: 'ApprovalGranted',
        schemaVersion: 1,
        data: { by: 'user:alice', reason: 'release window open', decidedAt: at(200) },
      },
    ]);
    expect(next.status).toBe('awaiting_approval');
    expect(next.approval).toMatchObject({ decision: 'granted', decidedBy: 'user:alice', requestedBy: 'policy:deploys-need-approval' });
  });

  it('when approval is denied then the denial is recorded with who and why', () => {
    const { events, state: next } = when(state, denyApproval());
    expect(events[0]).toMatchObject({ type: 'ApprovalDenied', data: { by: 'user:alice', reason: 'freeze' } });
    expect(next.approval?.decision).toBe('denied');
  });

  it('when granted without a name of who decided then it is refused as invalid', () => {
    const error = thrownBy(() => decide({ ...grantApproval(), by: '' }, state));
    expect(error).toBeInstanceOf(InvalidCommandError);
    expect(error).toMatchObject({ commandType: 'GrantApproval', field: 'by' });
  });

  it('when authorized before any grant then it is refused', () => {
    expectIllegal(state, authorize('per_use_approval'), 'approval_not_granted');
  });

  it('when denied for approval_denied while still pending then it is refused', () => {
    expectIllegal(state, denyExecution('approval_denied'), 'approval_not_denied');
  });

  it('when the approval times out then it is denied with approval_timeout', () => {
    const { state: next } = when(state, denyExecution('approval_timeout'));
    expect(next.status).toBe('denied');
    expect(next.denial?.basis).toBe('approval_timeout');
  });

  it('when the vault is locked then it is denied with vault_locked', () => {
    expect(when(state, denyExecution('vault_locked')).state.denial?.basis).toBe('vault_locked');
  });

  it('when a retry attaches then it is shown the pending approval', () => {
    expect(when(state, attachRetry()).events[0]).toMatchObject({ data: { returned: 'pending', replayed: false } });
  });

  it('when the client cancels then it is cancelled', () => {
    expect(when(state, cancel()).state.status).toBe('cancelled');
  });

  describe('and the approval was granted', () => {
    const granted = given(...accepted(), requestApproval(), grantApproval());

    it.each(['per_use_approval', 'session_grant'] as const)('when authorized on basis %s then it is authorized', (basis) => {
      const { state: next } = when(granted, authorize(basis));
      expect(next.status).toBe('authorized');
      expect(next.authorization).toEqual({ basis, authorizedAt: at(300) });
    });

    it('when authorized on basis policy then it is refused (the human decided, not policy)', () => {
      expectIllegal(granted, authorize('policy'), 'basis_not_applicable');
    });

    it('when the approval is decided again then it is refused', () => {
      expectIllegal(granted, denyApproval(), 'approval_not_pending');
    });

    it('when it times out then it is refused because the approval is no longer pending', () => {
      expectIllegal(granted, denyExecution('approval_timeout'), 'approval_not_pending');
    });
  });

  describe('and the approval was denied', () => {
    const refused = given(...accepted(), requestApproval(), denyApproval());

    it('when denied for approval_denied then it is denied', () => {
      const { state: next } = when(refused, denyExecution('approval_denied'));
      expect(next.status).toBe('denied');
      expect(next.denial?.basis).toBe('approval_denied');
    });

    it('when authorized anyway then it is refused', () => {
      expectIllegal(refused, authorize('per_use_approval'), 'approval_not_granted');
    });
  });
});

describe('given an authorized execution', () => {
  const state = given(...authorized());

  it('when dispatched then Dispatched is attempt 1 with the execution id as idempotency key', () => {
    const { events, state: next } = when(state, dispatch(at(400), 'dispatcher-http-7'));
    expect(events).toEqual([
      {
        type: 'Dispatched',
        schemaVersion: 1,
        data: { attempt: 1, dispatcherId: 'dispatcher-http-7', idempotencyKey: EXECUTION_ID, dispatchedAt: at(400) },
      },
    ]);
    expect(next.status).toBe('dispatched');
    expect(next.attempts).toBe(1);
    expect(next.firstDispatchedAt).toBe(at(400));
  });

  it('when dispatched after its window ended then it is refused (a retry may already run a new execution)', () => {
    expectIllegal(state, dispatch(at(WINDOW_MS)), 'window_ended');
  });

  it('when dispatched without a dispatcher id then it is refused as invalid', () => {
    const error = thrownBy(() => decide(dispatch(at(400), ''), state));
    expect(error).toBeInstanceOf(InvalidCommandError);
    expect(error).toMatchObject({ field: 'dispatcherId' });
  });

  it.each(['vault_locked', 'credential_unresolved', 'target_unresolved', 'policy'] as const)(
    'when denied on basis %s before sending then it is denied',
    (basis) => {
      expect(when(state, denyExecution(basis)).state.status).toBe('denied');
    },
  );

  it('when denied for approval_denied then it is refused', () => {
    expectIllegal(state, denyExecution('approval_denied'), 'basis_not_applicable');
  });

  it('when authorized again then it is refused', () => {
    expectIllegal(state, authorize(), 'state_does_not_allow');
  });

  it('when the client cancels then it is cancelled', () => {
    expect(when(state, cancel()).state.status).toBe('cancelled');
  });

  it('when the window has ended then it can be expired', () => {
    expect(when(state, expire()).state.status).toBe('expired');
  });

  it('when a result is reported delivered then it is refused (no outcome yet)', () => {
    expectIllegal(state, delivered(), 'no_definite_outcome');
  });
});

describe('given a dispatched execution', () => {
  const state = given(...dispatched());

  it('when the target reports progress then AttemptProgressed keeps the latest, the state stays dispatched, and an outcome ends the reports', () => {
    const first = when(state, progressed(3, { total: 10, message: 'copying' }));
    expect(first.events).toEqual([
      { type: 'AttemptProgressed', schemaVersion: 1, data: { attempt: 1, progress: 3, total: 10, message: 'copying', reportedAt: at(450) } },
    ]);
    expect(first.state).toMatchObject({ status: 'dispatched', attemptProgress: { attempt: 1, progress: 3, total: 10, message: 'copying' } });
    const long = when(first.state, progressed(4, { message: 'x'.repeat(500) }));
    expect((long.events[0]!.data as { message: string }).message).toHaveLength(200);
    const done = given(...dispatched(), progressed(3), observe());
    expectIllegal(done, progressed(5), 'state_does_not_allow');
    expect(thrownBy(() => decide(progressed(1, { attempt: 2 }), state))).toBeInstanceOf(StaleAttemptError);
  });

  it.each([
    [Number.NaN, null],
    [-1, null],
    [5, 4],
    [1, Number.POSITIVE_INFINITY],
  ])('when progress %s of %s is reported then it is refused as invalid', (progress, total) => {
    expect(thrownBy(() => decide(progressed(progress, { total }), state))).toBeInstanceOf(InvalidCommandError);
  });

  it('when a definite success is observed then it is completed with target status and result reference', () => {
    const { events, state: next } = when(state, observe());
    expect(events).toEqual([
      {
        type: 'OutcomeObserved',
        schemaVersion: 1,
        data: {
          attempt: 1,
          outcome: 'succeeded',
          source: 'response',
          targetStatus: 201,
          exitCode: null,
          resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1',
          resultDigest: `sha256:${'0f'.repeat(32)}`,
          observedAt: at(500),
        },
      },
    ]);
    expect(next.status).toBe('completed');
    expect(next.outcome).toMatchObject({ targetStatus: 201, resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1' });
  });

  it('when the target answers with an error then it is completed with that status, as an error answer', () => {
    const { state: next } = when(state, observe({ outcome: 'failed', targetStatus: 409, resultRef: null }));
    expect(next.status).toBe('completed');
    expect(next.outcome?.targetStatus).toBe(409);
    expect(executionStatusView(next)).toMatchObject({ state: 'completed', targetStatus: 409, errorAnswer: true });
  });

  it('when a remote command exits non-zero then it is completed with the exit code, as an error answer', () => {
    const { state: next } = when(state, observe({ outcome: 'failed', targetStatus: null, exitCode: 3 }));
    expect(executionStatusView(next)).toMatchObject({ state: 'completed', exitCode: 3, errorAnswer: true });
  });

  it('when a journal recorded before this meaning holds an error answer then it folds to completed, events untouched', () => {
    // As OutcomeObserved was written when a 500 folded to `failed`: the same payload, read with today's fold.
    const recorded = [
      ...historyOf(...dispatched()),
      {
        type: 'OutcomeObserved' as const,
        schemaVersion: 1 as const,
        data: { attempt: 1, outcome: 'failed' as const, source: 'response' as const, targetStatus: 500, exitCode: null, resultRef: 'result:x', resultDigest: null, observedAt: at(500) },
      },
    ];
    const before = JSON.stringify(recorded);
    const folded = foldExecution(recorded);
    expect(folded.status).toBe('completed');
    expect(executionStatusView(folded)).toMatchObject({ targetStatus: 500, errorAnswer: true });
    expect(JSON.stringify(recorded)).toBe(before);
  });

  it('when an outcome reports another attempt then a typed StaleAttemptError names both attempts', () => {
    const error = thrownBy(() => decide(observe({ attempt: 2 }), state));
    expect(error).toBeInstanceOf(StaleAttemptError);
    expect(error).toMatchObject({
      kind: 'stale_attempt',
      commandType: 'ObserveOutcome',
      executionId: EXECUTION_ID,
      currentAttempt: 1,
      reportedAttempt: 2,
    });
  });

  it('when the attempt was not sent then a failure is recorded with source not_sent and the reason', () => {
    const { events, state: next } = when(
      state,
      observe({ outcome: 'failed', source: 'not_sent', targetStatus: null, resultRef: null, resultDigest: null, notSentReason: 'host key mismatch: …' }),
    );
    expect(events[0]!.data).toMatchObject({ outcome: 'failed', source: 'not_sent', notSentReason: 'host key mismatch: …' });
    expect(next.status).toBe('failed');
    expect(executionStatusView(next).errorAnswer).toBe(false);
  });

  it('when a not-sent outcome claims a success or gives no reason then it is refused as invalid', () => {
    expect(thrownBy(() => decide(observe({ source: 'not_sent', notSentReason: 'refused' }), state))).toBeInstanceOf(InvalidCommandError);
    expect(thrownBy(() => decide(observe({ outcome: 'failed', source: 'not_sent' }), state))).toBeInstanceOf(InvalidCommandError);
  });

  it('when an outcome claims to come from a marker then it is refused (the response is the source here)', () => {
    expectIllegal(state, observe({ source: 'marker' }), 'wrong_outcome_source');
  });

  it('when an outcome carries a non-integer status then it is refused as invalid', () => {
    const error = thrownBy(() => decide(observe({ targetStatus: 20.1 }), state));
    expect(error).toBeInstanceOf(InvalidCommandError);
    expect(error).toMatchObject({ field: 'targetStatus' });
  });

  it('when no outcome comes back then the outcome is unknown', () => {
    const { events, state: next } = when(state, unknownOutcome());
    expect(events).toEqual([
      { type: 'OutcomeUnknown', schemaVersion: 1, data: { attempt: 1, reason: 'timeout_after_send', observedAt: at(500) } },
    ]);
    expect(next.status).toBe('outcome_unknown');
    expect(next.unknownOutcome?.reason).toBe('timeout_after_send');
  });

  it('when dispatched again then it is refused (no second dispatch of an attempt)', () => {
    expectIllegal(state, dispatch(at(450)), 'state_does_not_allow');
  });

  it('when the client cancels strictly then it is refused as already dispatched', () => {
    expectIllegal(state, cancel(at(450)), 'already_dispatched');
  });

  it('when cancellation is requested then it is recorded as evidence and nothing else changes', () => {
    const { events, state: next } = when(state, requestCancellation());
    expect(events).toEqual([
      {
        type: 'CancellationRequested',
        schemaVersion: 1,
        data: { trigger: 'client_notification', correlation: { jsonRpcId: 1 }, requestedAt: at(450) },
      },
    ]);
    expect(next).toEqual({ ...state, cancellationRequests: 1 });
  });

  it('when expiry is attempted after the window then it is refused while the attempt is unsettled', () => {
    expectIllegal(state, expire(at(WINDOW_MS * 2)), 'execution_unsettled');
  });

  it('when a review is required before the outcome is known to be unknown then it is refused', () => {
    expectIllegal(state, requireReview(), 'state_does_not_allow');
  });

  it('when a retry attaches then it is told the attempt is pending', () => {
    expect(when(state, attachRetry()).events[0]).toMatchObject({ data: { returned: 'pending' } });
  });
});

describe('given an outcome-unknown execution', () => {
  describe.each(['read_only', 'idempotent_write'] as const)('of class %s', (operationClass) => {
    const state = given(...unknown(operationClass));

    it('when dispatched again then attempt 2 carries the same idempotency key', () => {
      const { events, state: next } = when(state, dispatch(at(2_000), 'dispatcher-http-2'));
      expect(events[0]).toEqual({
        type: 'Dispatched',
        schemaVersion: 1,
        data: { attempt: 2, dispatcherId: 'dispatcher-http-2', idempotencyKey: EXECUTION_ID, dispatchedAt: at(2_000) },
      });
      expect(next.attempts).toBe(2);
      expect(next.firstDispatchedAt).toBe(at(400));
      expect(next.lastDispatch?.dispatchedAt).toBe(at(2_000));
    });

    it('when the attempts are used up then a typed AttemptLimitReachedError stops the next dispatch', () => {
      const exhausted = given(
        ...unknown(operationClass),
        dispatch(at(1_000)),
        unknownOutcome(2, at(1_100)),
        dispatch(at(2_000)),
        unknownOutcome(3, at(2_100)),
      );
      const error = thrownBy(() => decide(dispatch(at(3_000)), exhausted));
      expect(error).toBeInstanceOf(AttemptLimitReachedError);
      expect(error).toMatchObject({ kind: 'attempt_limit_reached', executionId: EXECUTION_ID, attempts: 3, maxAttempts: MAX_ATTEMPTS });
    });
  });

  describe('of class conditional_write', () => {
    const state = given(...unknown('conditional_write'));

    it('when dispatched before the status query then it is refused and told to query', () => {
      const error = thrownBy(() => decide(dispatch(at(2_000)), state));
      expect(error).toBeInstanceOf(RedispatchNotAllowedError);
      expect(error).toMatchObject({ operationClass: 'conditional_write', recoveryStep: 'query_status' });
    });

    it('when the status query says the precondition holds then the query is recorded and a re-dispatch is allowed', () => {
      const queried = when(state, statusQuery(true));
      expect(queried.events).toEqual([
        {
          type: 'StatusQueried',
          schemaVersion: 1,
          data: { attempt: 1, preconditionHolds: true, observedStatus: 'version=41', queriedAt: at(600) },
        },
      ]);
      expect(queried.state.status).toBe('outcome_unknown');
      expect(when(queried.state, dispatch(at(2_000))).state.attempts).toBe(2);
    });

    it('when the precondition no longer holds then a re-dispatch is refused in favour of review', () => {
      const queried = given(...unknown('conditional_write'), statusQuery(false));
      const error = thrownBy(() => decide(dispatch(at(2_000)), queried));
      expect(error).toMatchObject({ kind: 'redispatch_not_allowed', recoveryStep: 'hold_for_review' });
    });

    it('when the status query is about an earlier attempt then it is a stale attempt', () => {
      expect(thrownBy(() => decide(statusQuery(true, 0), state))).toBeInstanceOf(StaleAttemptError);
    });

    it('when a marker probe is recorded then it is refused (conditional writes have no marker)', () => {
      expectIllegal(state, markerProbe('absent'), 'evidence_not_applicable');
    });
  });

  describe('of class irreversible', () => {
    const state = given(...unknown('irreversible'));

    it('when dispatched again then a typed RedispatchNotAllowedError says to hold for review', () => {
      const error = thrownBy(() => decide(dispatch(at(2_000)), state));
      expect(error).toBeInstanceOf(RedispatchNotAllowedError);
      expect(error).toMatchObject({
        kind: 'redispatch_not_allowed',
        executionId: EXECUTION_ID,
        operationClass: 'irreversible',
        recoveryStep: 'hold_for_review',
      });
    });

    it('when a review is required then it needs review with the reason and attempt', () => {
      const { events, state: next } = when(state, requireReview('irreversible_outcome_unknown'));
      expect(events).toEqual([
        {
          type: 'ReviewRequired',
          schemaVersion: 1,
          data: { attempt: 1, reason: 'irreversible_outcome_unknown', requiredAt: at(700) },
        },
      ]);
      expect(next.status).toBe('needs_review');
      expect(next.review).toMatchObject({ reason: 'irreversible_outcome_unknown', resolution: null });
    });

    it('when a retry attaches then it is told the outcome is unknown', () => {
      expect(when(state, attachRetry()).events[0]).toMatchObject({ data: { returned: 'unknown' } });
    });

    it('when a retry attaches long after the window then it still attaches (an unknown outcome never becomes a fresh attempt)', () => {
      expect(when(state, attachRetry(at(WINDOW_MS * 10))).state.retriesAttached).toBe(1);
    });
  });

  describe('of class remote_command', () => {
    const state = given(...unknown('remote_command'));

    it('when dispatched before probing the marker then it is refused and told to probe', () => {
      expect(thrownBy(() => decide(dispatch(at(2_000)), state))).toMatchObject({ recoveryStep: 'probe_marker' });
    });

    it('when the marker is absent and the contract writes it before work then the probe is recorded and a re-dispatch allowed', () => {
      const probed = when(state, markerProbe('absent'));
      expect(probed.events).toEqual([
        {
          type: 'MarkerProbed',
          schemaVersion: 1,
          data: { attempt: 1, marker: 'absent', exitStatus: null, probedAt: at(600) },
        },
      ]);
      expect(when(probed.state, dispatch(at(2_000))).events[0]).toMatchObject({ data: { attempt: 2, idempotencyKey: EXECUTION_ID } });
    });

    it('when the marker is absent but the contract does not promise marker-before-work then a re-dispatch is refused', () => {
      const probed = given(
        ...unknown('remote_command', { attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: ATTEMPT_TIMEOUT_MS, markerBeforeWork: false } }),
        markerProbe('absent'),
      );
      expect(thrownBy(() => decide(dispatch(at(2_000)), probed))).toMatchObject({ recoveryStep: 'hold_for_review' });
    });

    it('when the probe could not ask the host then it is recorded with the reason, and a re-dispatch is refused', () => {
      const failure = 'host key mismatch: 10.0.0.5:22 presented ssh-ed25519 key SHA256:kq…';
      const probed = given(...unknown('remote_command'));
      const { events, state: next } = when(probed, { ...markerProbe('probe_failed'), failure });
      expect(events[0]!.data).toMatchObject({ marker: 'probe_failed', failure });
      expect(thrownBy(() => decide(dispatch(at(2_000)), next))).toBeInstanceOf(RedispatchNotAllowedError);
      expect(thrownBy(() => decide(markerProbe('probe_failed'), probed))).toBeInstanceOf(InvalidCommandError);
    });

    it('when the marker says started then a re-dispatch is refused', () => {
      const probed = given(...unknown('remote_command'), markerProbe('started'));
      expect(thrownBy(() => decide(dispatch(at(2_000)), probed))).toBeInstanceOf(RedispatchNotAllowedError);
    });

    it('when the marker says completed with exit 0 then the success is reported from the marker', () => {
      const probed = given(...unknown('remote_command'), markerProbe('completed', 0));
      const { state: next } = when(
        probed,
        observe({ source: 'marker', outcome: 'succeeded', targetStatus: null, exitCode: 0, resultRef: null }),
      );
      expect(next.status).toBe('completed');
      expect(next.outcome).toMatchObject({ source: 'marker', exitCode: 0 });
    });

    it('when the marker says completed with exit 3 and a success is claimed then it is refused as not proven', () => {
      const probed = given(...unknown('remote_command'), markerProbe('completed', 3));
      expectIllegal(probed, observe({ source: 'marker', outcome: 'succeeded', exitCode: 3 }), 'outcome_not_proven');
      // The command ran and exited 3: a definite answer, an error one.
      const next = when(probed, observe({ source: 'marker', outcome: 'failed', targetStatus: null, exitCode: 3 })).state;
      expect(executionStatusView(next)).toMatchObject({ state: 'completed', exitCode: 3, errorAnswer: true });
    });

    it('when an outcome is claimed from the response after it was declared unknown then it is refused', () => {
      expectIllegal(state, observe(), 'wrong_outcome_source');
    });

    it('when a status query is recorded then it is refused (remote commands have no status query)', () => {
      expectIllegal(state, statusQuery(true), 'evidence_not_applicable');
    });
  });

  it('when the client cancels then, having dispatched, it is refused', () => {
    expectIllegal(given(...unknown('idempotent_write')), cancel(at(600)), 'already_dispatched');
  });

  it('when an outcome-unknown is recorded twice then the second is refused', () => {
    expectIllegal(given(...unknown('idempotent_write')), unknownOutcome(), 'state_does_not_allow');
  });
});

describe('given an attempt the target runs as a task', () => {
  it('when the channel records the task while the attempt is in flight then AttemptTaskStarted keeps its reference, and nothing else moves', () => {
    const before = given(...dispatched({ operationClass: 'irreversible' }));
    const { events, state } = when(before, taskStarted());
    expect(events).toEqual([{ type: 'AttemptTaskStarted', schemaVersion: 1, data: { attempt: 1, task: TASK_REFERENCE, startedAt: at(440) } }]);
    expect(state.status).toBe('dispatched');
    expect(state.attemptTask).toEqual({ attempt: 1, task: TASK_REFERENCE, startedAt: at(440) });
  });

  it('when a second task is recorded for the same attempt, or one for an earlier attempt, or once the outcome is known, then it is refused', () => {
    const started = given(...dispatched(), taskStarted());
    expectIllegal(started, taskStarted({ task: { taskId: 'other' } }), 'state_does_not_allow');
    expect(thrownBy(() => decide(taskStarted({ attempt: 0 }), given(...dispatched())))).toBeInstanceOf(StaleAttemptError);
    expectIllegal(given(...completed()), taskStarted(), 'state_does_not_allow');
    expectIllegal(given(...unknown('irreversible')), taskStarted(), 'state_does_not_allow');
  });

  it('when the reference is not a JSON object or is larger than 2 KiB then it is refused as invalid', () => {
    const state = given(...dispatched());
    expect(thrownBy(() => decide(taskStarted({ task: ['a'] as never }), state))).toBeInstanceOf(InvalidCommandError);
    expect(thrownBy(() => decide(taskStarted({ task: { taskId: 'x'.repeat(2_100) } }), state))).toBeInstanceOf(InvalidCommandError);
  });

  describe.each(['read_only', 'idempotent_write', 'conditional_write', 'irreversible', 'remote_command'] as const)('of class %s, its outcome then unknown', (operationClass) => {
    const state = given(...dispatched({ operationClass }), taskStarted(), unknownOutcome());

    it('then recovery resumes the task before anything else, and no second dispatch is allowed meanwhile', () => {
      const error = thrownBy(() => decide(dispatch(at(2_000)), state));
      expect(error).toBeInstanceOf(RedispatchNotAllowedError);
      expect(error).toMatchObject({ recoveryStep: 'resume_task' });
    });

    it("when the resumed task gives the target's answer then it is observed with source task and the execution is completed", () => {
      const { events, state: next } = when(state, observe({ source: 'task', now: at(700), targetStatus: null }));
      expect(events[0]).toMatchObject({ type: 'OutcomeObserved', data: { attempt: 1, outcome: 'succeeded', source: 'task' } });
      expect(next.status).toBe('completed');
    });

    it("when the resumed task gave no outcome then the finding is recorded and the class's rule decides as it would without a task", () => {
      const checked = when(state, taskCheck('lost'));
      expect(checked.events).toEqual([
        { type: 'AttemptTaskChecked', schemaVersion: 1, data: { attempt: 1, finding: 'lost', reason: 'upstream ledger: task task-7 lost', checkedAt: at(600) } },
      ]);
      const withoutTask = given(...dispatched({ operationClass }), unknownOutcome());
      const stepOf = (s: ExecutionState) => {
        try {
          decide(dispatch(at(2_000)), s);
          return 'redispatch';
        } catch (error) {
          return (error as { recoveryStep?: string }).recoveryStep;
        }
      };
      expect(stepOf(checked.state)).toBe(stepOf(withoutTask));
      // Once checked, the task can prove nothing more: an outcome from it is refused.
      expectIllegal(checked.state, observe({ source: 'task', now: at(700) }), 'outcome_not_proven');
      expectIllegal(checked.state, taskCheck('working'), 'evidence_not_applicable');
    });
  });

  it('when no task was recorded then an outcome claiming to come from one is refused, and so is a task check', () => {
    const state = given(...unknown('irreversible'));
    expectIllegal(state, observe({ source: 'task', now: at(700) }), 'outcome_not_proven');
    expectIllegal(state, taskCheck('lost'), 'evidence_not_applicable');
  });

  it('when the task belongs to an earlier attempt then the current attempt has none to resume', () => {
    const state = given(...dispatched({ operationClass: 'idempotent_write' }), taskStarted(), unknownOutcome(), taskCheck('lost'), attachRetry(at(650)), dispatch(at(700)), unknownOutcome(2, at(800)));
    expect(when(state, dispatch(at(900))).state.attempts).toBe(3);
  });

  it('when the attempt reports its answer while in flight then the source is response, never task', () => {
    expectIllegal(given(...dispatched(), taskStarted()), observe({ source: 'task' }), 'wrong_outcome_source');
  });
});

describe('given attempt 1 unknown and attempt 2 dispatched after the agent retried', () => {
  const state = given(...unknown('idempotent_write'), attachRetry(at(600)), dispatch(at(700)));

  it('when attempt 2 reports it sent nothing, then it is refused: attempt 1 may have acted, so no failure is proven', () => {
    expectIllegal(state, observe({ attempt: 2, outcome: 'failed', source: 'not_sent', targetStatus: null, resultRef: null, resultDigest: null, notSentReason: 'refused' }), 'outcome_not_proven');
  });

  it('when attempt 2 records its outcome as unknown instead, then the execution stays unknown', () => {
    expect(when(state, unknownOutcome(2, at(800))).state.status).toBe('outcome_unknown');
  });
});

describe('given an attempt another instance gave up for lost while its dispatcher still had it', () => {
  describe.each(['dispatcher_lost', 'attempt_deadline_passed'] as const)('recorded unknown as %s', (reason) => {
    const lost = given(...dispatched({ operationClass: 'irreversible' }), unknownOutcome(1, at(500), reason));

    it('when the attempt\'s own answer arrives then it is recorded and settles the execution', () => {
      const { events, state } = when(lost, observe({ now: at(900) }));
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'OutcomeObserved', data: { attempt: 1, outcome: 'succeeded', source: 'response', targetStatus: 201 } });
      expect(state.status).toBe('completed');
    });

    it('when the answer arrives while the review it led to is pending then it settles the execution', () => {
      expect(when(given(...dispatched({ operationClass: 'irreversible' }), unknownOutcome(1, at(500), reason), requireReview()), observe({ now: at(900) })).state.status).toBe('completed');
    });

    it('when the answer arrives after a person resolved the review then it is refused', () => {
      const resolved = given(...dispatched({ operationClass: 'irreversible' }), unknownOutcome(1, at(500), reason), requireReview(), resolveReview('abandoned'));
      expectIllegal(resolved, observe({ now: at(900) }), 'state_does_not_allow');
    });

    it('when the answer of attempt 1 arrives after attempt 2 was dispatched then it is refused as stale', () => {
      const again = given(...dispatched({ operationClass: 'idempotent_write' }), unknownOutcome(1, at(500), reason), attachRetry(at(600)), dispatch(at(700)));
      expect(thrownBy(() => decide(observe({ now: at(900) }), again))).toBeInstanceOf(StaleAttemptError);
    });

    it('when the attempt reports instead that it sent nothing then it is refused: only an answer is evidence', () => {
      expectIllegal(lost, observe({ outcome: 'failed', source: 'not_sent', targetStatus: null, resultRef: null, resultDigest: null, notSentReason: 'refused' }), 'wrong_outcome_source');
    });

    it('when a second answer arrives then it is refused', () => {
      expectIllegal(when(lost, observe({ now: at(900) })).state, observe({ now: at(950) }), 'state_does_not_allow');
    });
  });

  it('when the dispatcher itself recorded the outcome unknown (no answer in time) then a later answer is refused', () => {
    expectIllegal(given(...unknown('irreversible')), observe({ now: at(900) }), 'wrong_outcome_source');
  });
});

describe('given an execution that needs review', () => {
  const state = given(...unknown('irreversible'), requireReview());

  it('when resolved as completed then it is completed with the operator as the source', () => {
    const { events, state: next } = when(state, resolveReview('completed'));
    expect(events).toEqual([
      {
        type: 'ReviewResolved',
        schemaVersion: 1,
        data: { resolution: 'completed', by: 'user:operator', reason: 'checked the target', resolvedAt: at(800) },
      },
    ]);
    expect(next.status).toBe('completed');
    expect(next.outcome).toMatchObject({ outcome: 'succeeded', source: 'review', resultRef: null });
    expect(next.review).toMatchObject({ resolution: 'completed', resolvedBy: 'user:operator' });
    expect(when(next, delivered()).state.status).toBe('delivered');
  });

  it('when resolved as not executed then nothing may be sent on that alone: it waits for the agent', () => {
    const resolved = when(state, resolveReview('not_executed')).state;
    expect(resolved.status).toBe('not_executed');
    expect(resolved.review).toMatchObject({ resolution: 'not_executed', resolvedBy: 'user:operator', resend: null });
    expectIllegal(resolved, dispatch(at(1_000)), 'state_does_not_allow');
  });

  it("when resolved as not executed and the agent retries, then the retry authorizes attempt 2 with the same key", () => {
    const resolved = when(state, resolveReview('not_executed')).state;
    const retried = when(resolved, attachRetry(at(900)));
    expect(retried.events[0]).toMatchObject({ type: 'RetryAttached', data: { returned: 'recovering' } });
    expect(retried.state.status).toBe('authorized');
    const { events } = when(retried.state, dispatch(at(1_000)));
    expect(events[0]).toMatchObject({ type: 'Dispatched', data: { attempt: 2, idempotencyKey: EXECUTION_ID } });
  });

  it('when resolved as not executed then a strict cancel is still refused because a Dispatched was appended', () => {
    expectIllegal(when(state, resolveReview('not_executed')).state, cancel(at(900)), 'already_dispatched');
  });

  it('when resolved as not executed and attempt 2 sends nothing, then that failure is definite: the operator vouched for attempt 1', () => {
    const second = when(when(when(state, resolveReview('not_executed')).state, attachRetry(at(900))).state, dispatch(at(1_000))).state;
    const { state: next } = when(second, observe({ attempt: 2, outcome: 'failed', source: 'not_sent', targetStatus: null, resultRef: null, resultDigest: null, notSentReason: 'refused' }));
    expect(next.status).toBe('failed');
  });

  it('when resolved as abandoned then it is abandoned and never dispatched again', () => {
    const abandoned = when(state, resolveReview('abandoned')).state;
    expect(abandoned.status).toBe('abandoned');
    expectIllegal(abandoned, dispatch(at(1_000)), 'state_does_not_allow');
  });

  it('when dispatched without a resolution then it is refused', () => {
    expectIllegal(state, dispatch(at(1_000)), 'state_does_not_allow');
  });

  it('when a retry attaches then it is told about the review hold', () => {
    expect(when(state, attachRetry()).events[0]).toMatchObject({ data: { returned: 'review_hold' } });
  });

  it('when resolved twice then the second resolution is refused', () => {
    expectIllegal(when(state, resolveReview('abandoned')).state, resolveReview('completed'), 'state_does_not_allow');
  });

  it('when resolved without naming the operator then it is refused as invalid', () => {
    expect(thrownBy(() => decide({ ...resolveReview('completed'), by: ' ' }, state))).toBeInstanceOf(InvalidCommandError);
  });

  it('when a conditional write under review is queried again then the evidence is recorded', () => {
    const underReview = given(...unknown('conditional_write'), requireReview('operator_requested'));
    expect(when(underReview, statusQuery(false)).state.statusQuery?.preconditionHolds).toBe(false);
  });
});

describe('given a completed execution', () => {
  const state = given(...completed());

  it('when receipt is proven then it is delivered, with the evidence, and the grace starts from that proof', () => {
    const { events, state: next } = when(state, delivered(at(900)));
    expect(events).toEqual([
      {
        type: 'ResultDelivered',
        schemaVersion: 1,
        data: {
          correlation: { jsonRpcId: 1, transport: 'streamable-http' },
          replayed: false,
          deliveredAt: at(900),
          evidence: 'a later request on the same MCP session after the response was written',
        },
      },
    ]);
    expect(next.status).toBe('delivered');
    expect(next.delivery).toEqual({ last: 'delivered', lastAt: at(900), lastDeliveredAt: at(900), deliveries: 1 });
  });

  it('when a delivery is recorded without evidence then it is refused (a written response proves nothing)', () => {
    expect(thrownBy(() => when(state, { ...delivered(at(900)), evidence: ' ' }))).toMatchObject({ field: 'evidence' });
  });

  it('when the transport closed first then the result is completed but not delivered', () => {
    const { events, state: next } = when(state, deliveryFailed());
    expect(events[0]).toMatchObject({ type: 'ResultDeliveryFailed', data: { reason: 'response stream closed before write' } });
    expect(next.status).toBe('completed_result_not_delivered');
  });

  it('when a result not delivered is later delivered to a retry then it is delivered', () => {
    const notDelivered = when(state, deliveryFailed()).state;
    expect(when(notDelivered, delivered(at(1_500), false)).state.status).toBe('delivered');
  });

  it('when a replay after delivery fails then it is no longer counted as delivered but keeps the last write time', () => {
    const deliveredOnce = when(state, delivered(at(900))).state;
    const { state: next } = when(deliveredOnce, deliveryFailed(at(1_200)));
    expect(next.status).toBe('completed_result_not_delivered');
    expect(next.delivery).toEqual({ last: 'failed', lastAt: at(1_200), lastDeliveredAt: at(900), deliveries: 1 });
  });

  it('when a replay is delivered again then the delivery count and last write time advance', () => {
    const deliveredOnce = when(state, delivered(at(900))).state;
    const { state: next } = when(deliveredOnce, delivered(at(1_200), true));
    expect(next.delivery).toMatchObject({ deliveries: 2, lastDeliveredAt: at(1_200) });
  });

  it('when dispatched again then it is refused', () => {
    expectIllegal(state, dispatch(at(1_000)), 'state_does_not_allow');
  });

  it('when cancellation is requested then it is only evidence', () => {
    const { events, state: next } = when(state, requestCancellation(at(1_000)));
    expect(events.map((event) => event.type)).toEqual(['CancellationRequested']);
    expect(next.status).toBe('completed');
  });

  it('when the window ends then it can be expired', () => {
    expect(when(when(state, delivered()).state, expire()).state.status).toBe('expired');
  });
});

describe('given an execution that failed: nothing was sent', () => {
  const state = given(
    ...dispatched(),
    observe({ outcome: 'failed', source: 'not_sent', targetStatus: null, resultRef: null, resultDigest: null, notSentReason: 'connect ECONNREFUSED 127.0.0.1:9' }),
  );

  it('when the failure is delivered then the delivery is recorded and it stays failed', () => {
    const { state: next } = when(state, delivered());
    expect(next.status).toBe('failed');
    expect(next.delivery?.last).toBe('delivered');
  });

  it('when the failure could not be delivered then it stays failed', () => {
    expect(when(state, deliveryFailed()).state.status).toBe('failed');
  });

  it('when a retry attaches then it gets the same failure', () => {
    expect(when(state, attachRetry()).events[0]).toMatchObject({ data: { returned: 'failure' } });
  });
});

describe('given a review resolved as not executed with a resend', () => {
  const held = (operationClass: 'idempotent_write' | 'irreversible') => given(...unknown(operationClass), requireReview());
  const resend = (by: string, now = at(800)) => resolveReview('not_executed', { resend: true, by, now });

  it('when the call is an idempotent write then it is authorized at once for attempt 2, with the resend on record', () => {
    const { events, state } = when(held('idempotent_write'), resend('user:alice'));
    expect(events[0]).toMatchObject({ type: 'ReviewResolved', data: { resolution: 'not_executed', by: 'user:alice', resend: true } });
    expect(state.status).toBe('authorized');
    expect(state.review?.resend).toEqual({ requestedBy: 'user:alice', requestedAt: at(800), confirmedBy: null });
    expect(when(state, dispatch(at(1_000))).events[0]).toMatchObject({ data: { attempt: 2, idempotencyKey: EXECUTION_ID } });
  });

  it('when the call is irreversible then the first resend only asks: nothing may be sent', () => {
    const { state } = when(held('irreversible'), resend('user:alice'));
    expect(state.status).toBe('not_executed');
    expect(state.review).toMatchObject({ resolvedBy: 'user:alice', resend: { requestedBy: 'user:alice', confirmedBy: null } });
    expectIllegal(state, dispatch(at(1_000)), 'state_does_not_allow');
  });

  it('when the same operator asks again for an irreversible call then it is refused: a second operator must confirm', () => {
    const asked = when(held('irreversible'), resend('user:alice')).state;
    expectIllegal(asked, resend('user:alice', at(850)), 'second_operator_required');
  });

  it('when another operator confirms an irreversible resend then it is authorized for attempt 2; who found it stays on record', () => {
    const asked = when(held('irreversible'), resend('user:alice')).state;
    const { state } = when(asked, resend('user:bob', at(850)));
    expect(state.status).toBe('authorized');
    expect(state.review).toMatchObject({ resolution: 'not_executed', resolvedBy: 'user:alice', resend: { requestedBy: 'user:alice', confirmedBy: 'user:bob' } });
    expect(when(state, dispatch(at(1_000))).events[0]).toMatchObject({ data: { attempt: 2 } });
  });

  it('when a resend is asked later, after a plain not-executed resolution, then it asks (irreversible) or sends (others)', () => {
    const irreversible = when(when(held('irreversible'), resolveReview('not_executed')).state, resend('user:alice', at(850))).state;
    expect(irreversible).toMatchObject({ status: 'not_executed', review: { resolvedBy: 'user:operator', resend: { requestedBy: 'user:alice', confirmedBy: null } } });
    expect(when(when(held('idempotent_write'), resolveReview('not_executed')).state, resend('user:alice', at(850))).state.status).toBe('authorized');
  });

  it('when a resend goes with another resolution, or comes without one once resolved, then it is refused', () => {
    expect(thrownBy(() => decide(resolveReview('completed', { resend: true }), held('irreversible')))).toBeInstanceOf(InvalidCommandError);
    expectIllegal(when(held('irreversible'), resolveReview('not_executed')).state, resolveReview('not_executed', { now: at(850) }), 'state_does_not_allow');
  });

  it('when the correlation window has ended then a resend is refused: it could never be sent', () => {
    expectIllegal(held('idempotent_write'), resend('user:alice', at(WINDOW_MS + 1)), 'window_ended');
  });

  it('when a journal holds a not-executed resolution written before resend existed then it folds to waiting, and its Dispatched still folds', () => {
    const recorded = [
      ...historyOf(...unknown('irreversible'), requireReview()),
      { type: 'ReviewResolved' as const, schemaVersion: 1 as const, data: { resolution: 'not_executed' as const, by: 'user:operator', reason: 'no charge', resolvedAt: at(800) } },
    ];
    expect(foldExecution(recorded).status).toBe('not_executed');
    const dispatchedThen = { type: 'Dispatched' as const, schemaVersion: 1 as const, data: { attempt: 2, dispatcherId: 'd1', idempotencyKey: EXECUTION_ID, dispatchedAt: at(900) } };
    expect(foldExecution([...recorded, dispatchedThen])).toMatchObject({ status: 'dispatched', attempts: 2 });
  });
});

describe('given an execution the target answered with an error (HTTP 500)', () => {
  const state = given(...dispatched(), observe({ outcome: 'failed', targetStatus: 500 }));

  it('when the answer is delivered then it is delivered, still an error answer', () => {
    const next = when(state, delivered()).state;
    expect(executionStatusView(next)).toMatchObject({ state: 'delivered', targetStatus: 500, errorAnswer: true });
  });

  it('when the answer could not be delivered then it is completed_result_not_delivered', () => {
    expect(when(state, deliveryFailed()).state.status).toBe('completed_result_not_delivered');
  });

  it('when a retry attaches then it gets the stored answer, never a second dispatch', () => {
    expect(when(state, attachRetry()).events[0]).toMatchObject({ data: { returned: 'stored_result', replayed: false } });
    expectIllegal(state, dispatch(at(1_000)), 'state_does_not_allow');
  });
});

describe('given a denied execution', () => {
  const state = given(...accepted(), denyExecution('policy'));

  it('when a retry attaches then it gets the same denial', () => {
    expect(when(state, attachRetry()).events[0]).toMatchObject({ data: { returned: 'denial' } });
  });

  it('when dispatched then it is refused', () => {
    expectIllegal(state, dispatch(), 'state_does_not_allow');
  });

  it('when authorized then it is refused', () => {
    expectIllegal(state, authorize(), 'state_does_not_allow');
  });
});

describe('given a cancelled execution', () => {
  const state = given(...accepted(), cancel());

  it.each([authorize(), dispatch(), requestApproval(), cancel(at(400))])('when $type then it is refused', (command) => {
    expectIllegal(state, command, 'state_does_not_allow');
  });

  it('when a retry tries to attach then a typed error says the prior was cancelled', () => {
    const error = thrownBy(() => decide(attachRetry(), state));
    expect(error).toBeInstanceOf(RetryNotMatchableError);
    expect(error).toMatchObject({ kind: 'retry_not_matchable', executionId: EXECUTION_ID, status: 'cancelled', reason: 'prior_cancelled' });
  });

  it('when cancellation is requested again then it is recorded as evidence only', () => {
    expect(when(state, requestCancellation()).state).toMatchObject({ status: 'cancelled', cancellationRequests: 1 });
  });

  it('when expiry is attempted then it is refused', () => {
    expectIllegal(state, expire(), 'state_does_not_allow');
  });
});

describe('given an expired execution', () => {
  const state = given(...accepted(), expire());

  it('when a retry tries to attach then it is refused as expired', () => {
    expect(thrownBy(() => decide(attachRetry(at(WINDOW_MS + 1)), state))).toMatchObject({ reason: 'prior_expired' });
  });

  it('when authorized then it is refused', () => {
    expectIllegal(state, authorize(), 'state_does_not_allow');
  });
});

describe('recording what the agent was told', () => {
  const inProgress = given(...dispatched());
  const correlation = { jsonRpcId: 1, sessionId: 'session-1', transport: 'streamable-http' };
  const told = { state: 'dispatched', isError: false, attempts: 1, attached: false, replayed: false, givenAt: at(940) } as const;

  it('given a call answered "still in progress", when the session closes with nothing proven, then AnswerGiven says so and the execution does not move', () => {
    const { events, state: next } = when(inProgress, answered());
    expect(events).toEqual([
      {
        type: 'AnswerGiven',
        schemaVersion: 1,
        data: {
          correlation,
          told,
          delivery: 'unproven',
          reason: 'the MCP session was closed before anything proved receipt',
          settledAt: at(950),
        },
      },
    ]);
    expect(next).toEqual(inProgress);
  });

  it('given a call answered "still in progress", when a later request proves receipt, then AnswerGiven is delivered with the evidence, never ResultDelivered', () => {
    const { events, state: next } = when(inProgress, answered({}, { kind: 'delivered', evidence: 'a later tools/list message on the same MCP session' }));
    expect(events).toEqual([
      expect.objectContaining({ type: 'AnswerGiven', data: expect.objectContaining({ delivery: 'delivered', evidence: 'a later tools/list message on the same MCP session' }) }),
    ]);
    expect(next.status).toBe('dispatched');
  });

  it('given a call told "still in progress" whose execution completed before its delivery settled, when receipt is proven, then it stays an AnswerGiven: the result was not what it told', () => {
    const completedSince = given(...completed());
    const { events, state: next } = when(completedSince, answered({}, { kind: 'delivered', evidence: 'a later message' }));
    expect(events[0]!.type).toBe('AnswerGiven');
    expect(next).toEqual(completedSince);
  });

  it('given a completed execution, when its result answer is proven delivered, then it is one ResultDelivered carrying what it told, and the state is delivered', () => {
    const result = { ...told, state: 'completed' as const, attached: true };
    const { events, state: next } = when(given(...completed()), answered(result, { kind: 'delivered', evidence: 'a later tools/list message' }, at(960)));
    expect(events).toEqual([
      {
        type: 'ResultDelivered',
        schemaVersion: 1,
        data: { correlation, replayed: false, deliveredAt: at(960), evidence: 'a later tools/list message', told: result },
      },
    ]);
    expect(next.status).toBe('delivered');
  });

  it('given a completed execution, when its result answer could not be handed over, then it is one ResultDeliveryFailed carrying what it told', () => {
    const result = { ...told, state: 'completed' as const };
    const { events, state: next } = when(given(...completed()), answered(result, { kind: 'not_delivered', reason: 'the response stream closed before the result was written' }));
    expect(events).toEqual([
      expect.objectContaining({
        type: 'ResultDeliveryFailed',
        data: { correlation, reason: 'the response stream closed before the result was written', failedAt: at(950), told: result },
      }),
    ]);
    expect(next.status).toBe('completed_result_not_delivered');
  });

  it('given a completed execution, when its result answer stays unproven, then it is an AnswerGiven and the result stays answerable (completed)', () => {
    const state = given(...completed());
    const { events, state: next } = when(state, answered({ state: 'completed' }));
    expect(events[0]).toMatchObject({ type: 'AnswerGiven', data: { delivery: 'unproven', told: { state: 'completed' } } });
    expect(next).toEqual(state);
  });

  it.each([
    ['a denial', () => given(...accepted(), denyExecution('policy')), { state: 'denied', isError: true, attempts: 0 }],
    ['a review hold', () => given(...unknown('irreversible'), requireReview()), { state: 'needs_review', isError: false }],
    ['an unknown outcome', () => given(...unknown('idempotent_write')), { state: 'outcome_unknown', isError: false }],
    ['a pending approval', () => given(...accepted(), requestApproval()), { state: 'awaiting_approval', isError: false, attempts: 0 }],
  ] as const)('given %s, when its answer is refused by the transport, then AnswerGiven records it not delivered and the state stays', (_, state, what) => {
    const before = state();
    const { events, state: next } = when(before, answered(what, { kind: 'not_delivered', reason: 'the client cancelled the request after its response was written' }));
    expect(events).toEqual([expect.objectContaining({ type: 'AnswerGiven', data: expect.objectContaining({ delivery: 'not_delivered', told: expect.objectContaining(what) }) })]);
    expect(next).toEqual(before);
  });

  it('given a cancelled execution, when the answer saying so settles, then it is recorded: evidence after the end is still evidence', () => {
    const cancelled = given(...accepted(), cancel());
    expect(when(cancelled, answered({ state: 'cancelled', isError: true, attempts: 0 })).events[0]!.type).toBe('AnswerGiven');
  });

  it('given an answer given as a task, then the event says how it reached the agent', () => {
    expect(when(inProgress, answered({ via: 'task_result', state: 'dispatched' })).events[0]).toMatchObject({ data: { told: { via: 'task_result' } } });
  });

  it('when an answer is recorded with a state no answer carries, without evidence for a delivery, or without a reason for a refusal, then it is refused as invalid', () => {
    expect(thrownBy(() => decide(answered({ state: 'initial' }), inProgress))).toMatchObject({ field: 'told.state' });
    expect(thrownBy(() => decide(answered({ state: 'finished' as never }), inProgress))).toMatchObject({ field: 'told.state' });
    expect(thrownBy(() => decide(answered({ attempts: -1 }), inProgress))).toMatchObject({ field: 'told.attempts' });
    expect(thrownBy(() => decide(answered({ givenAt: 'yesterday' as never }), inProgress))).toMatchObject({ field: 'told.givenAt' });
    expect(thrownBy(() => decide(answered({}, { kind: 'delivered', evidence: ' ' }), inProgress))).toMatchObject({ field: 'delivery.evidence' });
    expect(thrownBy(() => decide(answered({}, { kind: 'not_delivered', reason: '' }), inProgress))).toMatchObject({ field: 'delivery.reason' });
  });

  it('when an answer is recorded before the execution was accepted, then it is refused', () => {
    expectIllegal(initialState(), answered(), 'execution_not_accepted');
  });

  it('when a told carries fields of its own, then the event keeps only the declared ones', () => {
    const { events } = when(inProgress, answered({ ...told, secret: 'x' } as never));
    expect((events[0]!.data as { told: object }).told).toEqual(told);
  });

  it('given a result delivered before answers were recorded (no told), then it folds as before', () => {
    const { events, state: next } = when(given(...completed()), delivered(at(900)));
    expect(events[0]!.data).not.toHaveProperty('told');
    expect(next.status).toBe('delivered');
  });
});

describe('the decider as a whole', () => {
  it('exposes initialState, evolve and decide as one Decider', () => {
    const events = executionDecider.decide(acceptExecution(), executionDecider.initialState());
    expect(events.reduce(executionDecider.evolve, executionDecider.initialState()).status).toBe('accepted');
  });

  it('replaying the recorded events reconstructs the same state (invariant 7)', () => {
    const commands = [
      ...unknown('remote_command'),
      markerProbe('absent'),
      dispatch(at(1_000)),
      observe({ attempt: 2, exitCode: 0, targetStatus: null }),
      delivered(at(1_100)),
      attachRetry(at(1_200)),
    ];
    const events = historyOf(...commands);
    expect(foldExecution(events)).toEqual(given(...commands));
    expect(events.every((event) => event.schemaVersion === EXECUTION_EVENT_SCHEMA_VERSIONS[event.type])).toBe(true);
  });

  it('summarises what the agent is told: id, state, attempts, first dispatch time, target status', () => {
    const state = given(...unknown('idempotent_write'), dispatch(at(1_000)), observe({ attempt: 2, targetStatus: 200 }));
    expect(executionStatusView(state)).toEqual({
      executionId: EXECUTION_ID,
      state: 'completed',
      attempts: 2,
      firstDispatchedAt: at(400),
      targetStatus: 200,
      exitCode: null,
      errorAnswer: false,
      resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1',
      denialBasis: null,
      reviewReason: null,
    });
  });
});
