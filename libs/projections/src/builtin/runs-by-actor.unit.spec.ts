import { describe, expect, it } from 'vitest';
import { runsByActor } from './runs-by-actor';
import { fold } from '../test-support/fold';
import { droppedConnectionThenAttach, twoActors } from '../test-support/gateway-scenarios';
import { at, executionIdOf, fingerprintOf, RecordedHistory, T0 } from '../test-support/recorded-history';

describe('runs-by-actor', () => {
  it('given a declared run that reconnected, then one run with one execution, one retry and two sessions', () => {
    const { history } = droppedConnectionThenAttach();
    expect(runsByActor.rows(fold(runsByActor, history.events), {})).toEqual([
      {
        actor: 'agent:deploy-bot',
        run: 'run-dropped-connection',
        runSource: 'declared_run',
        executions: 1,
        retriesAttached: 1,
        tools: 'set_config',
        sessions: 2,
        firstAcceptedAt: T0,
        lastAcceptedAt: T0,
      },
    ]);
  });

  it('given no declared run, then the MCP session stands for the run, per actor', () => {
    const { history } = twoActors();
    const rows = runsByActor.rows(fold(runsByActor, history.events), {});
    expect(rows.map((row) => [row['actor'], row['run'], row['runSource'], row['executions']])).toEqual([
      ['agent:deploy-bot', 'session:session-a', 'mcp_session', 1],
      ['agent:second-agent', 'session:session-b', 'mcp_session', 1],
    ]);
  });

  it('given several tools in one run and an actor named like an object key, then tools are listed once each', () => {
    const history = new RecordedHistory();
    const scope = { kind: 'run', runId: 'r1' } as const;
    history.accept(executionIdOf('A'), { fingerprint: fingerprintOf('a1'), actor: '__proto__', scope, tool: 'set_config' });
    history.accept(executionIdOf('B'), { fingerprint: fingerprintOf('b1'), actor: '__proto__', scope, tool: 'deploy', now: at(1_000) });
    history.accept(executionIdOf('C'), { fingerprint: fingerprintOf('c1'), actor: '__proto__', scope, tool: 'deploy', now: at(2_000), correlation: {} });
    const [row] = runsByActor.rows(fold(runsByActor, history.events), {});
    expect(row).toMatchObject({ actor: '__proto__', run: 'r1', executions: 3, tools: 'deploy set_config', sessions: 1, lastAcceptedAt: at(2_000) });
  });
});
