import { describe, expect, it } from 'vitest';
import { NO_STREAM } from '@kurrent/kurrentdb-client';
import { DuplicateEventIdError, GENESIS_HASH, validateAppend, WrongExpectedRevisionError, type ExpectedRevision } from '@oncegate/event-store';
import { appendRequests, planGroup, type GroupState } from './append-plan';
import { streamNames } from './stream-names';

const names = streamNames('oncegate');
const recordedAt = '2026-12-02T08:00:00.000Z';

const append = (streamId: string, types: string[], expected: ExpectedRevision = 'any', ids: Array<string | undefined> = []) => ({
  streamId,
  expected,
  events: validateAppend(
    streamId,
    types.map((type, i) => ({ type, data: { i }, ...(ids[i] === undefined ? {} : { id: ids[i] }) })),
    expected,
  ),
});

const state = (overrides: Partial<GroupState> = {}): GroupState => ({ head: 0, tips: new Map(), takenIds: new Set(), recordedAt, ...overrides });

describe('kurrentdb append planning', () => {
  it('given appends issued together, when one expects a revision the stream does not have, then it alone is refused and the others take consecutive positions', () => {
    const plan = planGroup(
      [[append('quiet-1', ['Q'], 'no_stream')], [append('busy', ['Wrong'], 'no_stream')], [append('quiet-2', ['Q'], 'no_stream')], [append('quiet-1', ['Q2'], 0)]],
      state({ head: 10, tips: new Map([['busy', { revision: 0, hash: 'b'.repeat(64) }]]) }),
    );
    expect(plan.outcomes.map((outcome) => ('error' in outcome ? 'refused' : 'accepted'))).toEqual(['accepted', 'refused', 'accepted', 'accepted']);
    expect((plan.outcomes[1] as { error: unknown }).error).toBeInstanceOf(WrongExpectedRevisionError);
    expect((plan.outcomes[1] as { error: unknown }).error).toMatchObject({ streamId: 'busy', expected: 'no_stream', actual: 0 });
    expect(plan.writes.map((write) => `${write.event.position}:${write.event.streamId}@${write.event.revision}`)).toEqual(['11:quiet-1@0', '12:quiet-2@0', '13:quiet-1@1']);
    expect(plan.tipsBefore).toEqual(new Map([['quiet-1', undefined], ['quiet-2', undefined]]));
  });

  it('given a stream written twice in a group, then the second append continues the first one’s chain', () => {
    const plan = planGroup([[append('s', ['A'])], [append('s', ['B'], 0)]], state());
    const [a, b] = plan.writes.map((write) => write.event);
    expect(a).toMatchObject({ revision: 0, prev: GENESIS_HASH, position: 1 });
    expect(b).toMatchObject({ revision: 1, prev: a!.hash, position: 2 });
  });

  it('given a stored event id, then the append holding it is refused whole with DuplicateEventIdError, and an id taken earlier in the group too', () => {
    const id = '01890a5d-ac96-774b-bcce-b302099a8057';
    const fresh = '01890a5d-ac96-774b-bcce-b302099a8058';
    const plan = planGroup(
      [[append('t', ['Fresh', 'Dup'], 'no_stream', [undefined, id])], [append('u', ['First'], 'any', [fresh])], [append('v', ['Again'], 'any', [fresh])]],
      state({ takenIds: new Set([id]) }),
    );
    expect((plan.outcomes[0] as { error: unknown }).error).toBeInstanceOf(DuplicateEventIdError);
    expect((plan.outcomes[0] as { error: unknown }).error).toMatchObject({ streamId: 't', eventId: id });
    expect('results' in plan.outcomes[1]!).toBe(true);
    expect((plan.outcomes[2] as { error: unknown }).error).toMatchObject({ kind: 'duplicate_event_id', eventId: fresh });
    expect(plan.writes.map((write) => write.event.streamId)).toEqual(['u']);
  });

  it('given a multi-stream append, then its results are per entry, in batch order, each at its stream’s last event', () => {
    const plan = planGroup(
      [[append('intent-a', ['IntentClaimed'], 'no_stream'), append('execution-x', ['A', 'B'], 0), append('other', ['O'])]],
      state({ head: 1, tips: new Map([['execution-x', { revision: 0, hash: 'x'.repeat(64) }]]) }),
    );
    expect(plan.outcomes[0]).toMatchObject({
      results: [
        { streamId: 'intent-a', nextExpectedRevision: 0, position: 2 },
        { streamId: 'execution-x', nextExpectedRevision: 2, position: 4 },
        { streamId: 'other', nextExpectedRevision: 0, position: 5 },
      ],
    });
    expect(new Set(plan.writes.map((write) => write.event.recordedAt))).toEqual(new Set([recordedAt]));
    expect(plan.writes[1]!.event.prev).toBe('x'.repeat(64));
  });

  it('given a plan, then the one multi-stream append names each stream’s exact tip, each event id absent, and the log ending at the head', () => {
    const plan = planGroup(
      [[append('s', ['A'])], [append('t', ['B', 'C'], 'stream_exists')], [append('s', ['D'])]],
      state({ head: 5, tips: new Map([['t', { revision: 3, hash: 't'.repeat(64) }]]) }),
    );
    const requests = appendRequests(plan, names);
    const ids = plan.writes.map((write) => write.event.id);
    expect(requests.map((request) => [request.streamName, request.expectedState, request.events.length])).toEqual([
      ['oncegate:s', NO_STREAM, 2],
      ['oncegate:t', 3n, 2],
      ...ids.map((id) => [`oncegate~event-id-${id}`, NO_STREAM, 1]),
      ['oncegate~log', 4n, 4],
    ]);
    const log = requests.at(-1)!;
    expect(log.events.map((record) => (record.metadata as Record<string, string>)['oncegate.position'])).toEqual(['6', '7', '8', '9']);
    expect(log.events.map((record) => record.type)).toEqual(['A', 'B', 'C', 'D']);
    for (const request of requests) {
      for (const record of request.events) expect(Object.values(record.metadata as Record<string, unknown>).every((value) => typeof value === 'string')).toBe(true);
    }
  });

  it('given an empty store, then the log is expected not to exist yet', () => {
    const requests = appendRequests(planGroup([[append('s', ['A'])]], state()), names);
    expect(requests.at(-1)).toMatchObject({ streamName: 'oncegate~log', expectedState: NO_STREAM });
  });
});
