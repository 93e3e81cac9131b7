import { executionIdOfStream, type ExecutionEventType, type ExecutionId, type ExecutionState } from '@oncegate/domain';
import { readAllFrom, type EventStore } from '@oncegate/event-store';
import { loadExecution, type LoadedExecution } from './execution-journal';

/**
 * Every execution whose stream holds an event of `eventType` (e.g. `ReviewRequired`, `ApprovalRequested`),
 * loaded and kept when `keep` accepts its current state: the operator queues. Executions come in the global
 * order of their first such event, so the oldest is first.
 */
export async function executionsWithEvent(
  store: EventStore,
  eventType: ExecutionEventType,
  keep: (state: ExecutionState) => boolean,
): Promise<LoadedExecution[]> {
  const ids = new Set<ExecutionId>();
  for await (const event of readAllFrom(store, { filter: { eventTypes: [eventType] } })) {
    const id = executionIdOfStream(event.streamId);
    if (id !== undefined) ids.add(id);
  }
  const executions = await Promise.all([...ids].map((id) => loadExecution(store, id)));
  return executions.filter((execution) => keep(execution.state));
}
