import { describe, expect, it } from 'vitest';
import type { OperationClass } from './operation-class';
import {
  attemptDeadline,
  ATTEMPT_REPORT_MARGIN_MS,
  nextRecoveryStep,
  recoveryEvidenceOf,
  recoveryStepAfterUnknownOutcome,
  type RecoveryEvidence,
  type RecoveryStep,
} from './recovery';
import {
  at,
  ATTEMPT_TIMEOUT_MS,
  completed,
  dispatch,
  dispatched,
  given,
  markerProbe,
  requireReview,
  statusQuery,
  unknown,
  unknownOutcome,
} from './test-support/execution-fixtures';

const NONE: RecoveryEvidence = { kind: 'none' };
const holds: RecoveryEvidence = { kind: 'status_query', preconditionHolds: true };
const noLongerHolds: RecoveryEvidence = { kind: 'status_query', preconditionHolds: false };
const marker = (state: 'completed' | 'started' | 'absent' | 'probe_failed', exitStatus: number | null = null): RecoveryEvidence => ({
  kind: 'marker_probe',
  marker: state,
  exitStatus,
});

function stepFor(
  operationClass: OperationClass,
  evidence: RecoveryEvidence,
  options: { markerBeforeWork?: boolean; attempts?: number; maxAttempts?: number } = {},
): RecoveryStep {
  return recoveryStepAfterUnknownOutcome({
    operationClass,
    evidence,
    markerBeforeWork: options.markerBeforeWork ?? true,
    attempts: options.attempts ?? 1,
    maxAttempts: options.maxAttempts ?? 3,
  });
}

describe('recovery after an unknown outcome (docs/design.md section 6)', () => {
  describe.each(['read_only', 'idempotent_write'] as const)('given class %s', (operationClass) => {
    it('when no evidence is needed then it re-dispatches with the same key as the next attempt', () => {
      expect(stepFor(operationClass, NONE, { attempts: 1 })).toEqual({ kind: 'redispatch_same_key', nextAttempt: 2 });
    });

    it('when the attempts are used up then it holds for review', () => {
      expect(stepFor(operationClass, NONE, { attempts: 3, maxAttempts: 3 })).toEqual({
        kind: 'hold_for_review',
        reason: 'attempt_limit_reached',
      });
    });
  });

  describe('given class conditional_write', () => {
    it('when there is no status yet then it queries the status', () => {
      expect(stepFor('conditional_write', NONE)).toEqual({ kind: 'query_status' });
    });

    it('when the precondition still holds then it re-dispatches with the same key', () => {
      expect(stepFor('conditional_write', holds)).toEqual({ kind: 'redispatch_same_key', nextAttempt: 2 });
    });

    it('when the precondition no longer holds then it holds for review', () => {
      expect(stepFor('conditional_write', noLongerHolds)).toEqual({
        kind: 'hold_for_review',
        reason: 'precondition_no_longer_holds',
      });
    });

    it('when the precondition holds but the attempts are used up then it holds for review', () => {
      expect(stepFor('conditional_write', holds, { attempts: 3 })).toEqual({
        kind: 'hold_for_review',
        reason: 'attempt_limit_reached',
      });
    });

    it('when the evidence is a marker (not this class) then it still asks for its own evidence', () => {
      expect(stepFor('conditional_write', marker('absent'))).toEqual({ kind: 'query_status' });
    });
  });

  describe('given class irreversible', () => {
    it.each([
      ['no evidence', NONE],
      ['a status that holds', holds],
      ['an absent marker', marker('absent')],
    ])('when there is %s then it always holds for review', (_label, evidence) => {
      expect(stepFor('irreversible', evidence, { attempts: 1, maxAttempts: 10 })).toEqual({
        kind: 'hold_for_review',
        reason: 'irreversible_outcome_unknown',
      });
    });
  });

  describe('given class remote_command', () => {
    it('when the marker has not been probed then it probes the marker', () => {
      expect(stepFor('remote_command', NONE)).toEqual({ kind: 'probe_marker' });
    });

    it('when the marker is absent and the contract writes it before work then it re-dispatches with the same key', () => {
      expect(stepFor('remote_command', marker('absent'), { markerBeforeWork: true })).toEqual({
        kind: 'redispatch_same_key',
        nextAttempt: 2,
      });
    });

    it('when the marker is absent and the contract makes no marker-before-work promise then it holds for review', () => {
      expect(stepFor('remote_command', marker('absent'), { markerBeforeWork: false })).toEqual({
        kind: 'hold_for_review',
        reason: 'marker_absent_without_marker_before_work',
      });
    });

    it.each([true, false])('when the marker says started (marker-before-work %s) then it holds for review', (before) => {
      expect(stepFor('remote_command', marker('started'), { markerBeforeWork: before })).toEqual({
        kind: 'hold_for_review',
        reason: 'marker_started',
      });
    });

    it.each([true, false])('when the probe could not ask the host (marker-before-work %s) then it holds for review, never re-dispatches', (before) => {
      expect(stepFor('remote_command', marker('probe_failed'), { markerBeforeWork: before })).toEqual({
        kind: 'hold_for_review',
        reason: 'marker_probe_failed',
      });
    });

    it('when the marker says completed with exit 0 then it reports a success from the marker', () => {
      expect(stepFor('remote_command', marker('completed', 0))).toEqual({
        kind: 'report_outcome_from_marker',
        outcome: 'succeeded',
        exitStatus: 0,
      });
    });

    it('when the marker says completed with a non-zero exit then it reports a failure from the marker', () => {
      expect(stepFor('remote_command', marker('completed', 2))).toEqual({
        kind: 'report_outcome_from_marker',
        outcome: 'failed',
        exitStatus: 2,
      });
    });

    it('when the marker says completed without an exit status then it holds for review', () => {
      expect(stepFor('remote_command', marker('completed', null))).toEqual({
        kind: 'hold_for_review',
        reason: 'marker_completed_without_exit_status',
      });
    });

    it('when the marker is absent but the attempts are used up then it holds for review', () => {
      expect(stepFor('remote_command', marker('absent'), { attempts: 3 })).toMatchObject({
        reason: 'attempt_limit_reached',
      });
    });
  });
});

describe('the next recovery step of an execution', () => {
  it('given a dispatched attempt inside its timeout and reporting margin when asked then it waits until the deadline', () => {
    const state = given(...dispatched());
    const deadline = at(400 + ATTEMPT_TIMEOUT_MS + ATTEMPT_REPORT_MARGIN_MS);
    expect(attemptDeadline(state)).toBe(deadline);
    expect(nextRecoveryStep(state, at(400 + ATTEMPT_TIMEOUT_MS + ATTEMPT_REPORT_MARGIN_MS - 1))).toEqual({
      kind: 'wait',
      reason: 'attempt_in_flight',
      until: deadline,
    });
  });

  it('given a dispatched attempt past its deadline when asked then the outcome is to be recorded as unknown, deadline passed', () => {
    const state = given(...dispatched());
    expect(nextRecoveryStep(state, at(400 + ATTEMPT_TIMEOUT_MS + ATTEMPT_REPORT_MARGIN_MS))).toEqual({
      kind: 'record_unknown_outcome',
      attempt: 1,
      reason: 'attempt_deadline_passed',
    });
  });

  it('given a dispatched attempt whose dispatcher is gone when asked then the outcome is to be recorded as unknown at once, dispatcher lost', () => {
    const state = given(...dispatched());
    expect(nextRecoveryStep(state, at(401), 'gone')).toEqual({ kind: 'record_unknown_outcome', attempt: 1, reason: 'dispatcher_lost' });
  });

  it('given an unknown outcome of a conditional write with a status query when asked then the query decides', () => {
    const state = given(...unknown('conditional_write'), statusQuery(true));
    expect(nextRecoveryStep(state, at(700))).toEqual({ kind: 'redispatch_same_key', nextAttempt: 2 });
  });

  it('given an unknown outcome of a remote command whose marker-before-work is off when the marker is absent then it holds', () => {
    const state = given(
      ...unknown('remote_command', { attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: ATTEMPT_TIMEOUT_MS, markerBeforeWork: false } }),
      markerProbe('absent'),
    );
    expect(nextRecoveryStep(state, at(700))).toEqual({
      kind: 'hold_for_review',
      reason: 'marker_absent_without_marker_before_work',
    });
  });

  it('given evidence about an earlier attempt when a later attempt is unknown then that evidence does not count', () => {
    const state = given(
      ...unknown('conditional_write'),
      statusQuery(true, 1),
      dispatch(at(1_000)),
      unknownOutcome(2, at(1_100)),
    );
    expect(recoveryEvidenceOf(state)).toEqual({ kind: 'none' });
    expect(nextRecoveryStep(state, at(1_200))).toEqual({ kind: 'query_status' });
  });

  it('given an execution under review when asked then it waits for the operator', () => {
    const state = given(...unknown('irreversible'), requireReview());
    expect(nextRecoveryStep(state, at(900))).toEqual({ kind: 'wait', reason: 'awaiting_review', until: null });
  });

  it('given a completed execution when asked then there is nothing to recover', () => {
    expect(nextRecoveryStep(given(...completed()), at(900))).toEqual({ kind: 'nothing_to_recover' });
  });
});
