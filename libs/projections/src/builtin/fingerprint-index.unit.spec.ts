import { describe, expect, it } from 'vitest';
import { fingerprintIndex } from './fingerprint-index';
import { fold } from '../test-support/fold';
import { droppedConnectionThenAttach, newExecutionAfterGrace, twoActors } from '../test-support/gateway-scenarios';
import { T0 } from '../test-support/recorded-history';

describe('fingerprint-index', () => {
  it('given two executions of one fingerprint, then it lists both in order with the latest state', () => {
    const { history, first, second, fingerprint } = newExecutionAfterGrace();
    expect(fingerprintIndex.rows(fold(fingerprintIndex, history.events), {})).toEqual([
      {
        fingerprint,
        actor: 'agent:deploy-bot',
        tool: 'set_config',
        executions: 2,
        executionIds: `${first} ${second}`,
        firstAcceptedAt: T0,
        latestExecutionId: second,
        latestState: 'delivered',
      },
    ]);
  });

  it('given the same arguments from two actors, then there are two fingerprints', () => {
    const { history, a, b } = twoActors();
    const rows = fingerprintIndex.rows(fold(fingerprintIndex, history.events), {});
    expect(rows.map((row) => [row['fingerprint'], row['actor'], row['executionIds']])).toEqual([
      [a.fingerprint, a.actor, a.executionId],
      [b.fingerprint, b.actor, b.executionId],
    ]);
  });

  it('given a retry attached after a failed delivery, then the latest state follows the domain (delivered)', () => {
    const { history } = droppedConnectionThenAttach();
    const state = fold(fingerprintIndex, history.events);
    expect(fingerprintIndex.rows(state, {})[0]).toMatchObject({ executions: 1, latestState: 'delivered' });
    const beforeRetry = fold(fingerprintIndex, history.events.filter((event) => event.type !== 'RetryAttached' && event.type !== 'ResultDelivered'));
    expect(fingerprintIndex.rows(beforeRetry, {})[0]).toMatchObject({ latestState: 'completed_result_not_delivered' });
  });
});
