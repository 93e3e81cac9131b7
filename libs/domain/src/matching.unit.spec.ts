import { describe, expect, it } from 'vitest';
import { IdempotencyKeyConflictError } from './errors';
import type { ExecutionState } from './execution-state';
import { initialState } from './execution-state';
import {
  checkIdempotencyKey,
  EXPIRABLE,
  MATCHABLE,
  matchRetry,
  retryReturnOf,
  type AttachAction,
  type MatchDecision,
} from './matching';
import {
  accepted,
  at,
  attachRetry,
  authorized,
  cancel,
  completed,
  delivered,
  deliveryFailed,
  denyExecution,
  dispatched,
  EXECUTION_ID,
  expire,
  FINGERPRINT,
  FINGERPRINT_UNDER_K2,
  given,
  GRACE_MS,
  observe,
  OTHER_FINGERPRINT,
  requestApproval,
  requireReview,
  resolveReview,
  thrownBy,
  unknown,
  when,
  WINDOW_MS,
} from './test-support/execution-fixtures';

const INSIDE_WINDOW = at(WINDOW_MS - 1);
const WINDOW_END = at(WINDOW_MS);

function match(prior: ExecutionState | undefined, now = at(1_000), newIntent = false): MatchDecision {
  return matchRetry({ prior, now, newIntent });
}

function attachWith(action: AttachAction): MatchDecision {
  return { kind: 'attach', executionId: EXECUTION_ID, action };
}

describe('matching a retry (docs/design.md section 5)', () => {
  it('lists the matchable states of docs/design.md section 5 plus denied, failed, abandoned and not_executed', () => {
    expect(MATCHABLE).toEqual([
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
    ]);
    expect(MATCHABLE).not.toContain('cancelled');
    expect(MATCHABLE).not.toContain('expired');
    expect(EXPIRABLE).not.toContain('dispatched');
    expect(EXPIRABLE).not.toContain('outcome_unknown');
    expect(EXPIRABLE).not.toContain('needs_review');
  });

  describe('given no prior execution', () => {
    it('when a call arrives then it is a new execution', () => {
      expect(match(undefined)).toEqual({ kind: 'new_execution', reason: 'no_prior', expirePrior: false });
      expect(match(initialState())).toEqual({ kind: 'new_execution', reason: 'no_prior', expirePrior: false });
    });
  });

  describe('given a prior inside its window', () => {
    it('when it was accepted and not yet dispatched then the retry continues it', () => {
      expect(match(given(...accepted()), INSIDE_WINDOW)).toEqual(attachWith({ kind: 'continue' }));
    });

    it('when it was authorized and not yet dispatched then the retry continues it', () => {
      expect(match(given(...authorized()))).toEqual(attachWith({ kind: 'continue' }));
    });

    it('when it awaits approval then the retry is shown the pending approval', () => {
      expect(match(given(...accepted(), requestApproval()))).toEqual(attachWith({ kind: 'show_pending_approval' }));
    });

    it('when it was denied then the retry gets the same denial', () => {
      expect(match(given(...accepted(), denyExecution('vault_locked')))).toEqual(
        attachWith({ kind: 'return_denial', basis: 'vault_locked' }),
      );
    });

    it('when it is dispatched and in flight then recovery by class applies, marked in flight', () => {
      expect(match(given(...dispatched({ operationClass: 'conditional_write' })))).toEqual(
        attachWith({
          kind: 'recover_by_class',
          operationClass: 'conditional_write',
          recovery: 'query_status_then_decide',
          inFlight: true,
        }),
      );
    });

    it.each([
      ['read_only', 'redispatch'],
      ['idempotent_write', 'redispatch_same_key'],
      ['conditional_write', 'query_status_then_decide'],
      ['irreversible', 'hold_for_review'],
      ['remote_command', 'probe_marker_then_decide'],
    ] as const)('when its outcome is unknown and the class is %s then recovery is %s', (operationClass, recovery) => {
      expect(match(given(...unknown(operationClass)))).toEqual(
        attachWith({ kind: 'recover_by_class', operationClass, recovery, inFlight: false }),
      );
    });

    it('when it needs review then the retry gets the review hold and its reason', () => {
      expect(match(given(...unknown('irreversible'), requireReview()))).toEqual(
        attachWith({ kind: 'return_review_hold', reason: 'irreversible_outcome_unknown' }),
      );
    });

    it('when it completed and was never delivered then the stored result is returned, not replayed', () => {
      const state = given(...completed());
      expect(match(state)).toEqual(
        attachWith({ kind: 'return_stored_result', resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1' }),
      );
    });

    it('when its result delivery failed then the stored result is returned even long after the grace', () => {
      const state = given(...completed(), deliveryFailed(at(900)));
      expect(match(state, at(900 + GRACE_MS * 3))).toMatchObject({
        kind: 'attach',
        action: { kind: 'return_stored_result' },
      });
    });

    it('when it failed (nothing was sent) then the retry gets that failure', () => {
      expect(match(given(...dispatched(), observe({ outcome: 'failed', source: 'not_sent', targetStatus: null, resultRef: null, resultDigest: null, notSentReason: 'connection refused' })))).toEqual(attachWith({ kind: 'return_failure' }));
    });

    it('when the target answered with an error then the retry gets that stored answer, not a new attempt', () => {
      expect(match(given(...dispatched(), observe({ outcome: 'failed', targetStatus: 500 })))).toEqual(
        attachWith({ kind: 'return_stored_result', resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1' }),
      );
    });

    it('when a review abandoned it then the retry is told so, not given a fresh attempt', () => {
      expect(match(given(...unknown('irreversible'), requireReview(), resolveReview('abandoned')))).toEqual(
        attachWith({ kind: 'return_abandoned' }),
      );
    });

    it('when a review found it not executed then the retry sends it again, recorded as recovering', () => {
      const resolved = given(...unknown('irreversible'), requireReview(), resolveReview('not_executed'));
      expect(match(resolved)).toEqual(attachWith({ kind: 'send_again' }));
      expect(when(resolved, attachRetry()).events[0]).toMatchObject({ type: 'RetryAttached', data: { returned: 'recovering', replayed: false } });
    });
  });

  describe('given a delivered prior and the redelivery grace', () => {
    const deliveredAt = at(900);
    const state = given(...completed(), delivered(deliveredAt));

    it('when the retry comes inside the grace then the stored result is replayed', () => {
      expect(match(state, at(900 + GRACE_MS - 1))).toEqual(
        attachWith({ kind: 'replay_stored_result', resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1' }),
      );
    });

    it('when the retry comes exactly at the end of the grace then it is a new execution', () => {
      expect(match(state, at(900 + GRACE_MS))).toEqual({
        kind: 'new_execution',
        reason: 'redelivery_grace_elapsed',
        expirePrior: false,
      });
    });

    it('when the retry comes after the grace but inside the window then it is a new execution', () => {
      expect(match(state, at(900 + GRACE_MS + 30_000))).toMatchObject({ reason: 'redelivery_grace_elapsed' });
    });

    it('when the grace is zero then redelivery is disabled and a retry is a new execution at once', () => {
      const noGrace = given(...completed({ redeliveryGraceMs: 0 }), delivered(deliveredAt));
      expect(match(noGrace, at(901))).toEqual({
        kind: 'new_execution',
        reason: 'redelivery_grace_disabled',
        expirePrior: false,
      });
    });

    it('when the result was replayed later then the grace runs from the latest write', () => {
      const replayed = given(...completed(), delivered(deliveredAt), delivered(at(50_000), true));
      expect(match(replayed, at(50_000 + GRACE_MS - 1))).toMatchObject({ action: { kind: 'replay_stored_result' } });
    });

    it('when the grace outlasts the window then the window still ends the match', () => {
      const longGrace = given(...completed({ redeliveryGraceMs: WINDOW_MS * 2 }), delivered(deliveredAt));
      expect(match(longGrace, WINDOW_END)).toEqual({ kind: 'new_execution', reason: 'window_ended', expirePrior: true });
    });
  });

  describe('given a result written but never acknowledged (no proof of receipt)', () => {
    it.each(['read_only', 'idempotent_write', 'conditional_write', 'irreversible', 'remote_command'] as const)(
      'when a %s call is repeated long after the grace inside the window then it attaches to the stored result',
      (operationClass) => {
        const written = given(...completed({ operationClass }));
        expect(match(written, INSIDE_WINDOW)).toEqual(
          attachWith({ kind: 'return_stored_result', resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1' }),
        );
      },
    );
  });

  describe('given a delivered conditional write, irreversible call or remote command', () => {
    it.each(['conditional_write', 'irreversible', 'remote_command'] as const)(
      'when a %s call is repeated after any grace but inside the window then it attaches and replays, whatever the delivery record says',
      (operationClass) => {
        // A grace recorded by an older gateway (60 s) or set to 0 does not end the match for these classes.
        for (const redeliveryGraceMs of [null, 0, GRACE_MS]) {
          const state = given(...completed({ operationClass, redeliveryGraceMs }), delivered(at(900)));
          expect(match(state, INSIDE_WINDOW)).toEqual(
            attachWith({ kind: 'replay_stored_result', resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1' }),
          );
        }
      },
    );

    it('when the caller declares a new intent then it is a new execution', () => {
      const state = given(...completed({ operationClass: 'irreversible', redeliveryGraceMs: null }), delivered(at(900)));
      expect(match(state, at(900 + GRACE_MS + 1), true)).toMatchObject({ kind: 'new_execution', reason: 'new_intent_requested' });
    });

    it('when the window has ended then it is a new execution', () => {
      const state = given(...completed({ operationClass: 'irreversible', redeliveryGraceMs: null }), delivered(at(900)));
      expect(match(state, WINDOW_END)).toEqual({ kind: 'new_execution', reason: 'window_ended', expirePrior: true });
    });
  });

  describe('given a prior whose window has ended', () => {
    it.each([
      ['accepted', () => given(...accepted())],
      ['awaiting_approval', () => given(...accepted(), requestApproval())],
      ['authorized', () => given(...authorized())],
      ['denied', () => given(...accepted(), denyExecution())],
      ['completed', () => given(...completed())],
      ['completed_result_not_delivered', () => given(...completed(), deliveryFailed())],
      ['failed', () => given(...dispatched(), observe({ outcome: 'failed', source: 'not_sent', targetStatus: null, resultRef: null, resultDigest: null, notSentReason: 'connection refused' }))],
    ])('when the prior is %s then it is a new execution and the prior should be expired', (_status, build) => {
      expect(match(build(), WINDOW_END)).toEqual({ kind: 'new_execution', reason: 'window_ended', expirePrior: true });
    });

    it.each([
      ['dispatched', () => given(...dispatched())],
      ['outcome_unknown', () => given(...unknown('idempotent_write'))],
      ['needs_review', () => given(...unknown('irreversible'), requireReview())],
    ])('when the prior is %s then the retry still attaches (a side effect may be in flight or unknown)', (_s, build) => {
      expect(match(build(), at(WINDOW_MS * 100))).toMatchObject({ kind: 'attach', executionId: EXECUTION_ID });
    });

    it('when the window is "until confirmed" then it never ends', () => {
      const state = given(...accepted({ correlationWindowMs: null }), requestApproval());
      expect(match(state, at(365 * 24 * 3_600_000))).toEqual(attachWith({ kind: 'show_pending_approval' }));
    });
  });

  describe('given a prior that can no longer match', () => {
    it('when it was cancelled then the retry is a new execution', () => {
      expect(match(given(...accepted(), cancel()))).toEqual({
        kind: 'new_execution',
        reason: 'prior_cancelled',
        expirePrior: false,
      });
    });

    it('when it expired then the retry is a new execution', () => {
      expect(match(given(...accepted(), expire()), at(WINDOW_MS + 1))).toEqual({
        kind: 'new_execution',
        reason: 'prior_expired',
        expirePrior: false,
      });
    });
  });

  describe('given the new-intent override', () => {
    it.each([
      ['accepted', () => given(...accepted())],
      ['outcome_unknown', () => given(...unknown('irreversible'))],
      ['delivered inside the grace', () => given(...completed(), delivered(at(900)))],
    ])('when the caller says new-intent over a prior that is %s then it is always a new execution', (_s, build) => {
      expect(match(build(), at(901), true)).toEqual({
        kind: 'new_execution',
        reason: 'new_intent_requested',
        expirePrior: false,
      });
    });
  });
});

describe('what RetryAttached records as returned', () => {
  it.each<[AttachAction, string, boolean]>([
    [{ kind: 'continue' }, 'continued', false],
    [{ kind: 'show_pending_approval' }, 'pending', false],
    [{ kind: 'return_denial', basis: 'policy' }, 'denial', false],
    [{ kind: 'recover_by_class', operationClass: 'idempotent_write', recovery: 'redispatch_same_key', inFlight: true }, 'pending', false],
    [{ kind: 'recover_by_class', operationClass: 'idempotent_write', recovery: 'redispatch_same_key', inFlight: false }, 'recovering', false],
    [{ kind: 'recover_by_class', operationClass: 'irreversible', recovery: 'hold_for_review', inFlight: false }, 'unknown', false],
    [{ kind: 'return_stored_result', resultRef: 'r' }, 'stored_result', false],
    [{ kind: 'replay_stored_result', resultRef: 'r' }, 'stored_result', true],
    [{ kind: 'return_failure' }, 'failure', false],
    [{ kind: 'return_review_hold', reason: 'marker_started' }, 'review_hold', false],
    [{ kind: 'return_abandoned' }, 'abandoned', false],
  ])('given %o then returned is %s and replayed is %s', (action, returned, replayed) => {
    expect(retryReturnOf(action)).toEqual({ returned, replayed });
  });
});

describe('the caller idempotency-key rule', () => {
  const claim = { executionId: EXECUTION_ID, fingerprint: FINGERPRINT, actor: 'agent:deploy-bot', tool: 'deploy_release' };

  it('given an unclaimed key when checked then the key is free', () => {
    expect(checkIdempotencyKey({ claim: undefined, fingerprints: [FINGERPRINT] })).toEqual({ kind: 'unclaimed' });
  });

  it('given a key claimed with the same record when checked then it names the same execution', () => {
    expect(checkIdempotencyKey({ claim, fingerprints: [FINGERPRINT] })).toEqual({
      kind: 'same_intent',
      executionId: EXECUTION_ID,
    });
  });

  it('given a key claimed under an older ring key when the record matches under that key then it is the same intent', () => {
    expect(checkIdempotencyKey({ claim, fingerprints: [FINGERPRINT_UNDER_K2, FINGERPRINT] })).toMatchObject({
      kind: 'same_intent',
    });
  });

  it('given a key claimed with a different record when checked then a typed conflict names the first execution', () => {
    const error = thrownBy(() => checkIdempotencyKey({ claim, fingerprints: [OTHER_FINGERPRINT] }));
    expect(error).toBeInstanceOf(IdempotencyKeyConflictError);
    expect(error).toMatchObject({
      kind: 'idempotency_key_conflict',
      firstExecutionId: EXECUTION_ID,
      actor: 'agent:deploy-bot',
      tool: 'deploy_release',
    });
    expect((error as Error).message).toContain(EXECUTION_ID);
    expect((error as Error).message).not.toContain(OTHER_FINGERPRINT);
  });
});
