import { describe, expect, it } from 'vitest';
import { executionStream } from '@oncegate/domain';
import { acceptExecution, at, authorize, dispatch, EXECUTION_ID, historyOf } from '@oncegate/domain/testing';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { foldRecorded, stepTakenAlready } from './execution-journal';

/** The execution's events as a subscription would deliver them (positions and hashes do not matter here). */
function delivered(): RecordedEvent[] {
  return historyOf(acceptExecution(), authorize(), dispatch()).map((event, revision) => ({
    streamId: executionStream(EXECUTION_ID),
    revision,
    position: revision + 1,
    id: `event-${revision}`,
    type: event.type,
    data: event.data,
    metadata: { executionId: EXECUTION_ID, schemaVersion: event.schemaVersion },
    recordedAt: at(revision),
    prev: '',
    hash: '',
  }));
}

/** The cache is kept per store object; nothing here reads it. */
const aStore = () => ({}) as EventStore;

describe('the folded-execution cache fed by delivered events', () => {
  it('given nothing cached, when the first event of a stream is delivered, then it starts a fold and the next events extend it without a read', () => {
    const store = aStore();
    const [accepted, authorized, dispatched] = delivered();
    expect(foldRecorded(store, EXECUTION_ID, accepted!)?.state.status).toBe('accepted');
    expect(foldRecorded(store, EXECUTION_ID, authorized!)?.state.status).toBe('authorized');
    expect(foldRecorded(store, EXECUTION_ID, dispatched!)).toMatchObject({ revision: 2, state: { status: 'dispatched' } });
  });

  it('given nothing cached, when a later event is delivered first, then the fold cannot start and the stream must be read', () => {
    expect(foldRecorded(aStore(), EXECUTION_ID, delivered()[1]!)).toBeUndefined();
  });

  it('given a fold past an event, when a handler asks whether its step is taken, then it is for a state it no longer takes and not for one it does', () => {
    const store = aStore();
    const events = delivered();
    for (const event of events) foldRecorded(store, EXECUTION_ID, event);
    // The ExecutionAuthorized delivered to a dispatcher after Dispatched is folded: dispatched already.
    expect(stepTakenAlready(store, EXECUTION_ID, events[1]!, (state) => state.status === 'authorized')).toBe(true);
    expect(stepTakenAlready(store, EXECUTION_ID, events[1]!, (state) => state.accepted?.channel === 'http')).toBe(false);
    // Nothing cached for another store: it must read.
    expect(stepTakenAlready(aStore(), EXECUTION_ID, events[1]!, (state) => state.status === 'authorized')).toBe(false);
  });
});
