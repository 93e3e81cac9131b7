import { describe, expect, it } from 'vitest';
import { foldExecution } from '@oncegate/domain';
import {
  acceptExecution,
  attachRetry,
  authorize,
  delivered,
  dispatch,
  observe,
  requireReview,
  resolveReview,
  unknownOutcome,
} from '@oncegate/domain/testing';
import { foldBatch } from './fold-batch';
import { executionIdOf, historyFor, recorded } from './test-support/histories';

const irreversible = acceptExecution({
  operationClass: 'irreversible',
  redeliveryGraceMs: null,
  record: { ...acceptExecution().record, actor: 'agent:payments', tool: 'send_payment', target: 'payments.internal.example:8443/payments' },
});

describe('folding a batch of the journal into index rows', () => {
  it('given an irreversible call whose outcome was lost and held for review, the row says so in the domain\'s words', () => {
    const id = executionIdOf(1);
    const events = historyFor(id, irreversible, authorize(), dispatch(), unknownOutcome(), requireReview());
    const { rows } = foldBatch(recorded(id, events, 10), new Map());
    expect(rows).toEqual([
      expect.objectContaining({
        executionId: id,
        tool: 'send_payment',
        actor: 'agent:payments',
        operationClass: 'irreversible',
        state: 'needs_review',
        runId: null,
        channel: 'http',
        target: 'payments.internal.example:8443/payments',
        targetHost: 'payments.internal.example:8443',
        attempts: 1,
        reviewReason: 'irreversible_outcome_unknown',
        lastPosition: 14,
        acceptedAt: '2026-07-22T10:00:00.000Z',
        lastChangeAt: '2026-07-22T10:00:01.000Z',
      }),
    ]);
  });

  it('given the same history folded in two batches or in one, the rows and the domain\'s own fold agree', () => {
    const id = executionIdOf(2);
    const events = historyFor(id, acceptExecution(), authorize(), dispatch(), attachRetry(), observe({ targetStatus: 500, outcome: 'failed' }), delivered());
    const all = recorded(id, events, 1);
    const whole = foldBatch(all, new Map());
    const first = foldBatch(all.slice(0, 3), new Map());
    const second = foldBatch(all.slice(3), first.folded);
    expect(second.rows).toEqual(whole.rows);
    expect(whole.rows[0]).toMatchObject({ state: foldExecution(events).status, errorAnswer: true, targetStatus: 500, retriesAttached: 1 });
  });

  it('given a batch handed over again after a crash, nothing is counted twice', () => {
    const id = executionIdOf(3);
    const all = recorded(id, historyFor(id, acceptExecution(), authorize(), dispatch(), attachRetry(), attachRetry()), 1);
    const once = foldBatch(all, new Map());
    const again = foldBatch(all.slice(2), once.folded);
    expect(again.rows).toEqual([]);
    expect(once.rows[0]!.retriesAttached).toBe(2);
  });

  it('given an irreversible call found not executed and resent by two operators, the state is the domain\'s (authorized)', () => {
    const id = executionIdOf(4);
    const events = historyFor(
      id,
      irreversible,
      authorize(),
      dispatch(),
      unknownOutcome(),
      requireReview(),
      resolveReview('not_executed', { resend: true, by: 'user:alice' }),
      resolveReview('not_executed', { resend: true, by: 'user:bob' }),
    );
    const all = recorded(id, events, 1);
    const stepwise = all.reduce((known, event) => new Map([...known, ...foldBatch([event], known).folded]), foldBatch([], new Map()).folded);
    expect(stepwise.get(id)!.state.status).toBe(foldExecution(events).status);
    expect(foldExecution(events).status).toBe('authorized');
  });

  it('given events of other streams in the batch, only executions get rows', () => {
    const id = executionIdOf(5);
    const events = recorded(id, historyFor(id, acceptExecution()), 2);
    const other = { ...events[0]!, streamId: 'intent-abc', type: 'IntentClaimed', position: 1 };
    expect(foldBatch([other, ...events], new Map()).rows.map((row) => row.executionId)).toEqual([id]);
  });
});
