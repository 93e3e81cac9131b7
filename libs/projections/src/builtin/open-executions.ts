/**
 * Executions that are open right now: outcome unknown (bytes may have reached the target, nothing came back) and
 * the review queue (the gateway will not proceed alone). Statuses come from the domain's `evolve`.
 */
import type { ExecutionStatus } from '@oncegate/domain';
import { EXECUTION_STREAM_PREFIX, executionEventOf, statusAfter } from '../execution-events';
import type { Projection, ProjectionRow } from '../projection';
import { emptyTable, getOwn, setOwn, valuesOf, type Table } from '../table';

export type OpenStatus = Extract<ExecutionStatus, 'outcome_unknown' | 'needs_review'>;

interface AcceptedSummary {
  readonly actor: string;
  readonly tool: string;
  readonly operationClass: string;
  readonly fingerprint: string;
}

export interface OpenExecution extends AcceptedSummary {
  readonly executionId: string;
  readonly state: OpenStatus;
  /** The unknown outcome's reason or the review's reason. */
  readonly reason: string;
  /** When it became open in this state (the OutcomeUnknown or ReviewRequired time). */
  readonly since: string;
  readonly attempt: number;
}

export interface OpenExecutionsState {
  readonly statuses: Table<ExecutionStatus>;
  readonly accepted: Table<AcceptedSummary>;
  readonly open: Table<OpenExecution>;
}

const isOpen = (status: ExecutionStatus): status is OpenStatus =>
  status === 'outcome_unknown' || status === 'needs_review';

export const openExecutions: Projection<OpenExecutionsState> = {
  name: 'open-executions',
  description: 'executions now in outcome_unknown or needs_review, with reason and since when',
  key: ['executionId'],
  filter: { streamPrefixes: [EXECUTION_STREAM_PREFIX] },
  initialState: () => ({ statuses: emptyTable(), accepted: emptyTable(), open: emptyTable() }),
  evolve(state, recorded) {
    const found = executionEventOf(recorded);
    if (found === undefined) return state;
    const { executionId, event } = found;
    const previous = getOwn(state.statuses, executionId);
    if (previous === undefined && event.type !== 'ExecutionAccepted') return state;
    const status = setOwn(state.statuses, executionId, statusAfter(previous ?? 'initial', event));

    if (event.type === 'ExecutionAccepted') {
      const { record, toolName, operationClass, fingerprint } = event.data;
      setOwn(state.accepted, executionId, { actor: record.actor, tool: toolName, operationClass, fingerprint });
    }
    const summary = getOwn(state.accepted, executionId);
    if (summary === undefined) return state;

    if (event.type === 'OutcomeUnknown' && status === 'outcome_unknown') {
      const { reason, observedAt, attempt } = event.data;
      setOwn(state.open, executionId, { ...summary, executionId, state: status, reason, since: observedAt, attempt });
    } else if (event.type === 'ReviewRequired' && status === 'needs_review') {
      const { reason, requiredAt, attempt } = event.data;
      setOwn(state.open, executionId, { ...summary, executionId, state: status, reason, since: requiredAt, attempt });
    } else if (!isOpen(status)) {
      // Closed again (resolved, re-dispatched, outcome found by recovery): off the list.
      delete state.open[executionId];
    }
    return state;
  },
  rows(state): ProjectionRow[] {
    return valuesOf(state.open)
      .sort((a, b) => a.since.localeCompare(b.since))
      .map((open) => ({
        executionId: open.executionId,
        state: open.state,
        queue: open.state === 'needs_review' ? 'review' : 'unknown_outcome',
        reason: open.reason,
        since: open.since,
        attempt: open.attempt,
        actor: open.actor,
        tool: open.tool,
        operationClass: open.operationClass,
        fingerprint: open.fingerprint,
      }));
  },
};
