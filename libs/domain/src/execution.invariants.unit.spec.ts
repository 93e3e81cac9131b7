import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AnswerSettlement, ExecutionCommand } from './commands';
import { isDomainError } from './errors';
import type { ExecutionEvent } from './events';
import { addMs } from './durations';
import { decide, evolve } from './execution';
import { initialState } from './execution-state';
import { OPERATION_CLASSES, type OperationClass } from './operation-class';
import {
  acceptExecution,
  answered,
  attachRetry,
  authorize,
  cancel,
  delivered,
  deliveryFailed,
  denyApproval,
  denyExecution,
  dispatch,
  EXECUTION_ID,
  expire,
  grantApproval,
  markerProbe,
  observe,
  progressed,
  taskCheck,
  taskStarted,
  requestApproval,
  requestCancellation,
  requireReview,
  resolveReview,
  statusQuery,
  T0,
  unknownOutcome,
} from './test-support/execution-fixtures';

function pickOf<T>(options: readonly [T, ...T[]], variant: number): T {
  return options[variant % options.length] ?? options[0];
}

/** One randomly chosen command, built against the current state and clock. */
type Step = { readonly pick: number; readonly variant: number; readonly advanceMs: number; readonly stale: boolean };

type Builder = (now: string, variant: number, attempt: number) => ExecutionCommand;

/**
 * The command pool with weights: commands that move an execution forward are common, the ones that end it
 * (cancel, deny, expire, abandon) rare, so random histories reach re-dispatches and reviews.
 */
const BUILDERS: ReadonlyArray<{ readonly weight: number; readonly build: Builder }> = [
  { weight: 2, build: (now) => attachRetry(now) },
  { weight: 1, build: (now) => requestApproval({ now }) },
  { weight: 1, build: (now) => grantApproval(now) },
  { weight: 1, build: (now) => denyApproval(now) },
  { weight: 4, build: (now, v) => authorize(pickOf(['policy', 'session_grant', 'per_use_approval'], v), now) },
  {
    weight: 1,
    build: (now, v) => denyExecution(pickOf(['policy', 'vault_locked', 'approval_denied', 'approval_timeout'], v), now),
  },
  { weight: 6, build: (now) => dispatch(now) },
  {
    weight: 2,
    build: (now, v, attempt) =>
      observe({ now, attempt, outcome: v % 2 ? 'failed' : 'succeeded', source: v % 3 ? 'response' : v % 2 ? 'marker' : 'task', exitCode: v % 2 }),
  },
  { weight: 2, build: (now, v, attempt) => taskStarted({ now, attempt, task: { taskId: `task-${v}` } }) },
  { weight: 2, build: (now, v, attempt) => ({ ...taskCheck(pickOf(['working', 'lost', 'unreachable'], v), attempt), now }) },
  { weight: 6, build: (now, v, attempt) => unknownOutcome(attempt, now, pickOf(['timeout_after_send', 'dispatcher_lost', 'attempt_deadline_passed'], v)) },
  { weight: 2, build: (now, v, attempt) => progressed(v, { now, attempt, total: v % 2 ? 12 : null, message: v % 3 ? `step ${v}` : null }) },
  { weight: 3, build: (now, v, attempt) => ({ ...statusQuery(v % 2 === 0, attempt), now }) },
  {
    weight: 3,
    build: (now, v, attempt) => ({ ...markerProbe(pickOf(['completed', 'started', 'absent'], v), v % 2, attempt), now }),
  },
  { weight: 3, build: (now) => ({ ...requireReview(), now }) },
  {
    weight: 3,
    build: (now, v) => ({
      ...resolveReview(pickOf(['not_executed', 'completed', 'not_executed', 'abandoned'], v), { by: pickOf(['user:alice', 'user:bob', 'user:carol'], v) }),
      now,
      ...(v % 3 === 0 ? { resend: true } : {}),
    }),
  },
  { weight: 1, build: (now, v) => delivered(now, v % 2 === 1) },
  { weight: 1, build: (now) => deliveryFailed(now) },
  {
    weight: 2,
    build: (now, v, attempt) =>
      answered(
        { state: pickOf(['dispatched', 'completed', 'needs_review', 'denied', 'outcome_unknown'], v), attempts: Math.max(attempt, 0), givenAt: now },
        pickOf<AnswerSettlement>([{ kind: 'unproven' }, { kind: 'delivered', evidence: 'a later message' }, { kind: 'not_delivered', reason: 'stream closed' }], v),
        now,
      ),
  },
  { weight: 1, build: (now) => cancel(now) },
  { weight: 1, build: (now) => requestCancellation(now) },
  { weight: 1, build: (now) => expire(now) },
];

const stepArbitrary = fc.record({
  pick: fc.oneof(...BUILDERS.map(({ weight }, index) => ({ arbitrary: fc.constant(index), weight }))),
  variant: fc.nat({ max: 11 }),
  advanceMs: fc.integer({ min: 0, max: 5_000 }),
  stale: fc.boolean(),
});

/** Runs the steps, keeping the events of every command the decider accepts; anything but a DomainError fails. */
function simulate(operationClass: OperationClass, markerBeforeWork: boolean, steps: readonly Step[], windowMs: number | null = 3_600_000) {
  let state = initialState();
  let now = T0;
  const events: ExecutionEvent[] = [];
  const apply = (command: ExecutionCommand) => {
    try {
      for (const event of decide(command, state)) {
        events.push(event);
        state = evolve(state, event);
      }
    } catch (error) {
      if (!isDomainError(error)) throw error;
    }
  };
  apply(
    acceptExecution({
      operationClass,
      correlationWindowMs: windowMs,
      attemptPolicy: { maxAttempts: 2, attemptTimeoutMs: 30_000, markerBeforeWork },
    }),
  );
  for (const step of steps) {
    now = addMs(now, step.advanceMs);
    const builder = BUILDERS[step.pick];
    if (!builder) continue;
    apply(builder.build(now, step.variant, step.stale ? state.attempts - 1 : state.attempts));
  }
  return { events, state };
}

const irreversibleSteps = fc.array(stepArbitrary, { minLength: 5, maxLength: 60, size: 'max' });

const scenario = fc.record({
  operationClass: fc.constantFrom(...OPERATION_CLASSES),
  markerBeforeWork: fc.boolean(),
  steps: fc.array(stepArbitrary, { minLength: 5, maxLength: 60, size: 'max' }),
  windowMs: fc.constantFrom<number | null>(null, 60_000, 3_600_000),
});

describe('invariants over any history the decider accepts', () => {
  it('the random histories reach the interesting region: re-dispatches after recovery and after review', () => {
    const dispatchCount = (events: readonly ExecutionEvent[]) => events.filter((e) => e.type === 'Dispatched').length;
    const histories = fc
      .sample(scenario, { numRuns: 1_000, seed: 42 })
      .map((s) => simulate(s.operationClass, s.markerBeforeWork, s.steps, s.windowMs).events);
    expect(histories.filter((events) => dispatchCount(events) >= 2).length).toBeGreaterThan(20);
    const irreversible = fc
      .sample(irreversibleSteps, { numRuns: 1_000, seed: 42 })
      .map((steps) => simulate('irreversible', false, steps).events);
    expect(irreversible.filter((events) => dispatchCount(events) >= 2).length).toBeGreaterThan(5);
  });

  it('every Dispatched follows an authorization, numbers attempts 1, 2, … and reuses the execution id as key', () => {
    fc.assert(
      fc.property(scenario, ({ operationClass, markerBeforeWork, steps, windowMs }) => {
        const { events } = simulate(operationClass, markerBeforeWork, steps, windowMs);
        const dispatches = events.filter((event) => event.type === 'Dispatched');
        dispatches.forEach((event, index) => {
          expect(event.data.attempt).toBe(index + 1);
          expect(event.data.idempotencyKey).toBe(EXECUTION_ID);
        });
        const firstDispatch = events.findIndex((event) => event.type === 'Dispatched');
        if (firstDispatch >= 0) {
          expect(events.slice(0, firstDispatch).some((event) => event.type === 'ExecutionAuthorized')).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('an irreversible execution is never re-dispatched after an unknown outcome except via review not_executed', () => {
    fc.assert(
      fc.property(irreversibleSteps, (steps) => {
        const { events } = simulate('irreversible', false, steps);
        let sinceLastDispatch: ExecutionEvent[] | null = null;
        for (const event of events) {
          if (event.type === 'Dispatched') {
            if (sinceLastDispatch !== null) {
              expect(
                sinceLastDispatch.some((e) => e.type === 'ReviewResolved' && e.data.resolution === 'not_executed'),
              ).toBe(true);
            }
            sinceLastDispatch = [];
          } else {
            sinceLastDispatch?.push(event);
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a review resolution never sends by itself: after not_executed, the next attempt follows the agent\'s retry or a resend (an irreversible one confirmed by a second operator)', () => {
    fc.assert(
      fc.property(scenario, ({ operationClass, markerBeforeWork, steps, windowMs }) => {
        const { events } = simulate(operationClass, markerBeforeWork, steps, windowMs);
        let sinceLastDispatch: ExecutionEvent[] = [];
        for (const event of events) {
          if (event.type !== 'Dispatched') {
            sinceLastDispatch.push(event);
            continue;
          }
          const resolvedAt = sinceLastDispatch.findIndex((e) => e.type === 'ReviewResolved' && e.data.resolution === 'not_executed');
          if (resolvedAt >= 0) {
            const after = sinceLastDispatch.slice(resolvedAt);
            const resends = after.filter((e) => e.type === 'ReviewResolved' && e.data.resend === true).map((e) => (e as { data: { by: string } }).data.by);
            const resent = operationClass === 'irreversible' ? new Set(resends).size >= 2 : resends.length >= 1;
            expect(after.some((e) => e.type === 'RetryAttached') || resent).toBe(true);
          }
          sinceLastDispatch = [];
        }
      }),
      { numRuns: 400 },
    );
  });

  it('nothing is cancelled once dispatched, and nothing is dispatched once cancelled, expired or abandoned', () => {
    fc.assert(
      fc.property(scenario, ({ operationClass, markerBeforeWork, steps, windowMs }) => {
        const { events } = simulate(operationClass, markerBeforeWork, steps, windowMs);
        const types = events.map((event) => event.type);
        const firstDispatch = types.indexOf('Dispatched');
        const cancelled = types.indexOf('ExecutionCancelled');
        if (firstDispatch >= 0) expect(cancelled === -1 || cancelled < firstDispatch).toBe(true);
        const terminal = events.findIndex(
          (event) =>
            event.type === 'ExecutionCancelled' ||
            event.type === 'ExecutionExpired' ||
            (event.type === 'ReviewResolved' && event.data.resolution === 'abandoned'),
        );
        if (terminal >= 0) expect(types.slice(terminal).includes('Dispatched')).toBe(false);
        if (cancelled >= 0) {
          // After a cancel only evidence follows: a later cancel, and what callers were told.
          expect(types.slice(cancelled + 1).every((type) => type === 'CancellationRequested' || type === 'AnswerGiven')).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('there is exactly one ExecutionAccepted, first, and the fold of the events is the state', () => {
    fc.assert(
      fc.property(scenario, ({ operationClass, markerBeforeWork, steps, windowMs }) => {
        const { events, state } = simulate(operationClass, markerBeforeWork, steps, windowMs);
        expect(events[0]?.type).toBe('ExecutionAccepted');
        expect(events.filter((event) => event.type === 'ExecutionAccepted')).toHaveLength(1);
        expect(events.reduce(evolve, initialState())).toEqual(state);
        expect(state.attempts).toBe(events.filter((event) => event.type === 'Dispatched').length);
      }),
      { numRuns: 200 },
    );
  });

  it('an answer given moves nothing: AnswerGiven folds to the state before it, and a delivery follows only an answer that told a definite outcome', () => {
    fc.assert(
      fc.property(scenario, ({ operationClass, markerBeforeWork, steps, windowMs }) => {
        const { events } = simulate(operationClass, markerBeforeWork, steps, windowMs);
        let state = initialState();
        for (const event of events) {
          const next = evolve(state, event);
          if (event.type === 'AnswerGiven') expect(next).toBe(state);
          // Progress is said only of the attempt in flight, and moves nothing but what the agent is told.
          if (event.type === 'AttemptProgressed') {
            expect(state.status).toBe('dispatched');
            expect(event.data.attempt).toBe(state.attempts);
            expect({ ...next, attemptProgress: state.attemptProgress }).toEqual(state);
          }
          // A task is recorded only for the attempt in flight, and moves nothing else.
          if (event.type === 'AttemptTaskStarted') {
            expect(state.status).toBe('dispatched');
            expect(event.data.attempt).toBe(state.attempts);
            expect({ ...next, attemptTask: state.attemptTask }).toEqual(state);
          }
          // An outcome from a task: the current attempt's own task, recorded before its outcome was lost, not yet resumed.
          if (event.type === 'OutcomeObserved' && event.data.source === 'task') {
            expect(state.status).toBe('outcome_unknown');
            expect(state.attemptTask?.attempt).toBe(event.data.attempt);
            expect(state.taskCheck?.attempt).not.toBe(event.data.attempt);
          }
          if ((event.type === 'ResultDelivered' || event.type === 'ResultDeliveryFailed') && event.data.told !== undefined) {
            expect(['completed', 'completed_result_not_delivered', 'delivered', 'failed']).toContain(event.data.told.state);
          }
          state = next;
        }
      }),
      { numRuns: 400 },
    );
  });

  it('an outcome is observed at most once, only for the latest attempt, and nothing is dispatched after it', () => {
    fc.assert(
      fc.property(scenario, ({ operationClass, markerBeforeWork, steps, windowMs }) => {
        const { events } = simulate(operationClass, markerBeforeWork, steps, windowMs);
        let attempt = 0;
        let observed = false;
        for (const event of events) {
          if (event.type === 'Dispatched') {
            expect(observed).toBe(false);
            attempt = event.data.attempt;
          } else if (event.type === 'OutcomeObserved') {
            expect(observed).toBe(false);
            expect(event.data.attempt).toBe(attempt);
            observed = true;
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('recovery alone never sends more attempts than the policy allows', () => {
    fc.assert(
      fc.property(scenario, ({ operationClass, markerBeforeWork, steps, windowMs }) => {
        const { events } = simulate(operationClass, markerBeforeWork, steps, windowMs);
        const overrides = events.filter((e) => e.type === 'ReviewResolved' && e.data.resolution === 'not_executed');
        expect(events.filter((event) => event.type === 'Dispatched').length).toBeLessThanOrEqual(2 + overrides.length);
      }),
      { numRuns: 400 },
    );
  });
});
