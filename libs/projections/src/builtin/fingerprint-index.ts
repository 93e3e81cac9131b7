/**
 * fingerprint → the executions accepted under it (in order), who and what, and where the latest one stands.
 * The gateway claims through `intent-` streams; this index is for look-ups and analysts (docs/design.md section 5).
 */
import type { ExecutionStatus } from '@oncegate/domain';
import { EXECUTION_STREAM_PREFIX, executionEventOf, statusAfter } from '../execution-events';
import type { Projection, ProjectionRow } from '../projection';
import { emptyTable, getOwn, setOwn, valuesOf, type Table } from '../table';

export interface FingerprintEntry {
  readonly fingerprint: string;
  readonly executionIds: string[];
  readonly actor: string;
  readonly tool: string;
  readonly firstAcceptedAt: string;
}

export interface FingerprintIndexState {
  readonly fingerprints: Table<FingerprintEntry>;
  /** Status of every execution seen, for the latest state of each fingerprint. */
  readonly statuses: Table<ExecutionStatus>;
}

export const fingerprintIndex: Projection<FingerprintIndexState> = {
  name: 'fingerprint-index',
  description: 'fingerprint → execution ids (in order), actor, tool, first accepted at, latest state',
  key: ['fingerprint'],
  filter: { streamPrefixes: [EXECUTION_STREAM_PREFIX] },
  initialState: () => ({ fingerprints: emptyTable(), statuses: emptyTable() }),
  evolve(state, recorded) {
    const found = executionEventOf(recorded);
    if (found === undefined) return state;
    const { executionId, event } = found;
    if (event.type === 'ExecutionAccepted') {
      const { fingerprint, record, acceptedAt } = event.data;
      const entry =
        getOwn(state.fingerprints, fingerprint) ??
        setOwn(state.fingerprints, fingerprint, {
          fingerprint,
          executionIds: [],
          actor: record.actor,
          tool: record.tool,
          firstAcceptedAt: acceptedAt,
        });
      entry.executionIds.push(executionId);
    }
    const status = getOwn(state.statuses, executionId);
    if (status !== undefined || event.type === 'ExecutionAccepted') {
      setOwn(state.statuses, executionId, statusAfter(status ?? 'initial', event));
    }
    return state;
  },
  rows(state): ProjectionRow[] {
    return valuesOf(state.fingerprints).map((entry) => {
      const latest = entry.executionIds.at(-1) ?? null;
      return {
        fingerprint: entry.fingerprint,
        actor: entry.actor,
        tool: entry.tool,
        executions: entry.executionIds.length,
        executionIds: entry.executionIds.join(' '),
        firstAcceptedAt: entry.firstAcceptedAt,
        latestExecutionId: latest,
        latestState: latest === null ? null : (getOwn(state.statuses, latest) ?? null),
      };
    });
  },
};
