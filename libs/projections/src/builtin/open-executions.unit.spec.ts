import { describe, expect, it } from 'vitest';
import { openExecutions } from './open-executions';
import { fold } from '../test-support/fold';
import { droppedConnectionThenAttach } from '../test-support/gateway-scenarios';
import { at, executionIdOf, fingerprintOf, RecordedHistory } from '../test-support/recorded-history';

const dispatcher = { actor: 'service:dispatcher-http' };

function dispatchedHistory(operationClass: 'irreversible' | 'idempotent_write') {
  const history = new RecordedHistory();
  const unknown = executionIdOf('V');
  const review = executionIdOf('W');
  for (const [executionId, hex] of [[unknown, 'a1'], [review, 'b1']] as const) {
    history.accept(executionId, { fingerprint: fingerprintOf(hex), operationClass });
    history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, { actor: 'service:authorization' });
    history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: 'd1' }, dispatcher);
    history.run(executionId, { type: 'RecordUnknownOutcome', now: at(30_000), attempt: 1, reason: 'timeout_after_send' }, dispatcher);
  }
  history.run(review, { type: 'RequireReview', now: at(30_500), reason: 'irreversible_outcome_unknown' }, dispatcher);
  return { history, unknown, review };
}

describe('open-executions', () => {
  it('given an unknown outcome and a review hold, then both are listed with reason and since when', () => {
    const { history, unknown, review } = dispatchedHistory('irreversible');
    expect(openExecutions.rows(fold(openExecutions, history.events), {})).toEqual([
      expect.objectContaining({ executionId: unknown, state: 'outcome_unknown', queue: 'unknown_outcome', reason: 'timeout_after_send', since: at(30_000), attempt: 1, operationClass: 'irreversible' }),
      expect.objectContaining({ executionId: review, state: 'needs_review', queue: 'review', reason: 'irreversible_outcome_unknown', since: at(30_500) }),
    ]);
  });

  it('given the review resolved and the unknown attempt re-sent and answered, then nothing is open', () => {
    const { history, unknown, review } = dispatchedHistory('idempotent_write');
    history.run(review, { type: 'ResolveReview', now: at(40_000), resolution: 'completed', by: 'user:alice', reason: 'checked' }, { actor: 'user:alice' });
    history.run(unknown, { type: 'RecordDispatch', now: at(40_000), dispatcherId: 'd1' }, dispatcher);
    const afterRedispatch = fold(openExecutions, history.events);
    expect(openExecutions.rows(afterRedispatch, {})).toEqual([]);
  });

  it('given a completed execution, then it is not listed', () => {
    const { history } = droppedConnectionThenAttach();
    expect(openExecutions.rows(fold(openExecutions, history.events), {})).toEqual([]);
  });
});
