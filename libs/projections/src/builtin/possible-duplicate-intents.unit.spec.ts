import { describe, expect, it } from 'vitest';
import { intentBodyOf, possibleDuplicateIntents, possibleDuplicateIntentsProjection } from './possible-duplicate-intents';
import { fold } from '../test-support/fold';
import { newExecutionAfterGrace, twoActors } from '../test-support/gateway-scenarios';
import { at, executionIdOf, fingerprintOf, RecordedHistory, T0 } from '../test-support/recorded-history';

function restartedUnderNewRun(gapMs: number) {
  const history = new RecordedHistory();
  const args = { region: 'us-east-1', version: '2026.07.22' };
  history.accept(executionIdOf('A'), { fingerprint: fingerprintOf('a1'), scope: { kind: 'run', runId: 'run-1' }, arguments: args });
  history.accept(executionIdOf('B'), { fingerprint: fingerprintOf('b1'), scope: { kind: 'run', runId: 'run-2' }, arguments: args, now: at(gapMs) });
  // Another body in between: never grouped with the first.
  history.accept(executionIdOf('C'), { fingerprint: fingerprintOf('c1'), scope: { kind: 'run', runId: 'run-2' }, arguments: { ...args, version: 'other' }, now: at(1) });
  return history;
}

describe('possible-duplicate-intents', () => {
  it('given the same body accepted under two runs 4 minutes apart, then one group lists both executions, scopes and times', () => {
    const history = restartedUnderNewRun(4 * 60_000);
    expect(possibleDuplicateIntentsProjection.rows(fold(possibleDuplicateIntentsProjection, history.events), {})).toEqual([
      expect.objectContaining({
        actor: 'agent:deploy-bot',
        tool: 'set_config',
        method: 'PUT',
        arguments: '{"region":"us-east-1","version":"2026.07.22"}',
        executions: 2,
        executionIds: `${executionIdOf('A')} ${executionIdOf('B')}`,
        scopes: 'run:run-1 | run:run-2',
        acceptedAts: `${T0} ${at(4 * 60_000)}`,
        spanMs: 4 * 60_000,
      }),
    ]);
  });

  it('given them 11 minutes apart, then the default 10-minute window keeps them apart; a 15-minute window groups them', () => {
    const history = restartedUnderNewRun(11 * 60_000);
    expect(possibleDuplicateIntentsProjection.rows(fold(possibleDuplicateIntentsProjection, history.events), {})).toEqual([]);
    const wide = possibleDuplicateIntents({ windowMs: 15 * 60_000 });
    expect(wide.rows(fold(wide, history.events), {})).toHaveLength(1);
  });

  it('given two actors or the same scope twice, then nothing is reported', () => {
    const actors = twoActors().history;
    const sameScope = newExecutionAfterGrace().history;
    for (const history of [actors, sameScope]) {
      expect(possibleDuplicateIntentsProjection.rows(fold(possibleDuplicateIntentsProjection, history.events), {})).toEqual([]);
    }
  });

  it('the body is the record without its scope, in canonical JSON', () => {
    const record = { actor: 'a', tool: 't', channel: 'http', target: 'x', credential_ref: 'c', arguments: { b: 1, a: 2 }, intent_scope: 'run:1' };
    expect(intentBodyOf(record)).toBe('{"actor":"a","arguments":{"a":2,"b":1},"channel":"http","credential_ref":"c","target":"x","tool":"t"}');
    expect(() => possibleDuplicateIntents({ windowMs: -1 })).toThrow(RangeError);
  });
});
