/** Execution histories for the index's tests and benchmark: the domain's fixtures, under an execution id of one's own. */
import { executionIdFromUlid, executionStream, type ExecutionCommand, type ExecutionEvent, type ExecutionId } from '@oncegate/domain';
import { historyOf } from '@oncegate/domain/testing';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';

/** A valid execution id made from a number (the same number, the same id). */
export function executionIdOf(n: number): ExecutionId {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  let digits = '';
  for (let rest = n; digits.length < 16; rest = Math.floor(rest / 32)) digits = alphabet[rest % 32] + digits;
  return executionIdFromUlid(`01J3Z6Y8QK${digits}`);
}

/** The events of the fixture commands, as the execution `id`'s (its acceptance names it). */
export function historyFor(id: ExecutionId, ...commands: ExecutionCommand[]): ExecutionEvent[] {
  const withId = commands.map((command) => ({ ...command, executionId: id }) as ExecutionCommand);
  return historyOf(...withId);
}

/** The events as a store would hand them over, from global position `first` on. */
export function recorded(id: ExecutionId, events: readonly ExecutionEvent[], first: number, recordedAt = '2026-07-22T10:00:01.000Z'): RecordedEvent[] {
  return events.map((event, index) => ({
    streamId: executionStream(id),
    revision: index,
    position: first + index,
    id: `00000000-0000-7000-8000-${String(first + index).padStart(12, '0')}`,
    type: event.type,
    data: event.data,
    metadata: { schemaVersion: event.schemaVersion },
    recordedAt,
    prev: '',
    hash: '',
  }));
}

/** Appends the history to the execution's stream in a real store. */
export async function appendHistory(store: EventStore, id: ExecutionId, events: readonly ExecutionEvent[]): Promise<void> {
  await store.appendToStream(
    executionStream(id),
    events.map((event) => ({ type: event.type, data: event.data, metadata: { schemaVersion: event.schemaVersion, executionId: id } })),
  );
}
