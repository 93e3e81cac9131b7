/**
 * actor → the runs it made calls in, with how many executions each started and which tools it used. The run is
 * the declared one (`run:` intent scope); without it, the MCP session the call came in on stands for the run
 * (docs/design.md section 3); with neither, `(none)`.
 */
import { EXECUTION_STREAM_PREFIX, executionEventOf } from '../execution-events';
import type { Projection, ProjectionRow } from '../projection';
import { emptyTable, getOwn, setOwn, valuesOf, type Table } from '../table';

export type RunSource = 'declared_run' | 'mcp_session' | 'none';

export interface RunEntry {
  readonly actor: string;
  readonly run: string;
  readonly runSource: RunSource;
  executions: number;
  retriesAttached: number;
  readonly tools: string[];
  readonly sessions: string[];
  readonly firstAcceptedAt: string;
  lastAcceptedAt: string;
}

export interface RunsByActorState {
  /** Keyed by actor and run. */
  readonly runs: Table<RunEntry>;
  /** Execution id → key of its run, so a retry is counted where its execution was. */
  readonly runOfExecution: Table<string>;
}

export const NO_RUN = '(none)';

export const runsByActor: Projection<RunsByActorState> = {
  name: 'runs-by-actor',
  description: 'actor → runs (declared run, else MCP session), executions started, retries attached, tools used',
  key: ['actor', 'run'],
  filter: { streamPrefixes: [EXECUTION_STREAM_PREFIX], eventTypes: ['ExecutionAccepted', 'RetryAttached'] },
  initialState: () => ({ runs: emptyTable(), runOfExecution: emptyTable() }),
  evolve(state, recorded) {
    const found = executionEventOf(recorded);
    if (found === undefined) return state;
    const { executionId, event } = found;
    if (event.type === 'ExecutionAccepted') {
      const { record, intentScope, correlation, acceptedAt } = event.data;
      const [run, runSource]: [string, RunSource] =
        intentScope.kind === 'run'
          ? [intentScope.runId, 'declared_run']
          : correlation.sessionId !== undefined
            ? [`session:${correlation.sessionId}`, 'mcp_session']
            : [NO_RUN, 'none'];
      const key = `${record.actor}\u0000${run}`;
      const entry =
        getOwn(state.runs, key) ??
        setOwn(state.runs, key, {
          actor: record.actor,
          run,
          runSource,
          executions: 0,
          retriesAttached: 0,
          tools: [],
          sessions: [],
          firstAcceptedAt: acceptedAt,
          lastAcceptedAt: acceptedAt,
        });
      entry.executions += 1;
      entry.lastAcceptedAt = acceptedAt;
      addOnce(entry.tools, record.tool);
      if (correlation.sessionId !== undefined) addOnce(entry.sessions, correlation.sessionId);
      setOwn(state.runOfExecution, executionId, key);
    } else if (event.type === 'RetryAttached') {
      const key = getOwn(state.runOfExecution, executionId);
      const entry = key === undefined ? undefined : getOwn(state.runs, key);
      if (entry !== undefined) {
        entry.retriesAttached += 1;
        if (event.data.correlation.sessionId !== undefined) addOnce(entry.sessions, event.data.correlation.sessionId);
      }
    }
    return state;
  },
  rows(state): ProjectionRow[] {
    return valuesOf(state.runs)
      .sort((a, b) => a.actor.localeCompare(b.actor) || a.firstAcceptedAt.localeCompare(b.firstAcceptedAt))
      .map((entry) => ({
        actor: entry.actor,
        run: entry.run,
        runSource: entry.runSource,
        executions: entry.executions,
        retriesAttached: entry.retriesAttached,
        tools: [...entry.tools].sort().join(' '),
        sessions: entry.sessions.length,
        firstAcceptedAt: entry.firstAcceptedAt,
        lastAcceptedAt: entry.lastAcceptedAt,
      }));
  },
};

function addOnce(list: string[], value: string): void {
  if (!list.includes(value)) list.push(value);
}
