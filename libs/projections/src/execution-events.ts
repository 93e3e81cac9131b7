/**
 * Reading execution events out of the global log: which execution a recorded event belongs to, as a domain event,
 * and the status the domain's `evolve` gives after it.
 */
import {
  evolve,
  executionIdOfStream,
  initialState,
  isExecutionEventType,
  type ExecutionEvent,
  type ExecutionId,
  type ExecutionStatus,
} from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';
import { toDomainEvent } from '@oncegate/execution-journal';

export const EXECUTION_STREAM_PREFIX = 'execution-';
export const INTENT_STREAM_PREFIX = 'intent-';

export interface ExecutionEventAt {
  readonly executionId: ExecutionId;
  readonly event: ExecutionEvent;
  readonly recorded: RecordedEvent;
}

/** The domain event of an execution stream, or `undefined` for any other stream or an unknown type. */
export function executionEventOf(recorded: RecordedEvent): ExecutionEventAt | undefined {
  const executionId = executionIdOfStream(recorded.streamId);
  if (executionId === undefined || !isExecutionEventType(recorded.type)) return undefined;
  return { executionId, event: toDomainEvent(recorded), recorded };
}

/**
 * The status after one more event. `evolve` derives the status from the previous status and the event alone, so
 * projections keep one status per execution instead of a whole folded state, and still agree with the domain.
 */
export function statusAfter(status: ExecutionStatus, event: ExecutionEvent): ExecutionStatus {
  return evolve({ ...initialState(), status }, event).status;
}
