import { NO_STREAM, type AppendStreamRequest, type EventData } from '@kurrent/kurrentdb-client';
import {
  DuplicateEventIdError,
  expectedRevisionHolds,
  linkEvents,
  newEventId,
  WrongExpectedRevisionError,
  type AppendResult,
  type RecordedEvent,
  type SerialisedAppend,
} from '@oncegate/event-store';
import { eventIdRecord, logRecord, streamRecord, type EventToWrite } from './record-encoding';
import type { StreamNames } from './stream-names';
import { exactStreamState } from './stream-states';

/** A stream's last event before the group: its revision and hash. */
export interface StreamTip {
  readonly revision: number;
  readonly hash: string;
}

/** What the store read just before the group's append. */
export interface GroupState {
  /** Position of the last event in the log (0: none). */
  readonly head: number;
  /** The tip of each port stream the group names; absent: no stream. */
  readonly tips: ReadonlyMap<string, StreamTip>;
  /** Event ids of the group already stored. */
  readonly takenIds: ReadonlySet<string>;
  readonly recordedAt: string;
}

export type AppendOutcome = { readonly results: AppendResult[]; readonly events: RecordedEvent[] } | { readonly error: unknown };

export interface GroupPlan {
  /** One per append of the group, in order: its results, or the error that refuses it alone. */
  readonly outcomes: readonly AppendOutcome[];
  /** Every accepted event, in position order, with its metadata as stored. */
  readonly writes: readonly EventToWrite[];
  /** Each stream's revision before the group (`undefined`: no stream), for the streams the accepted appends write. */
  readonly tipsBefore: ReadonlyMap<string, number | undefined>;
  readonly head: number;
}

/**
 * Decides every append of a group against the state read just before, in order, as the appends before it in the
 * group leave it: an append whose expected revision does not hold, or one of whose event ids is stored, is refused
 * alone and changes nothing; the others take the next positions and continue their streams' chains. Events without
 * an id get a UUIDv7.
 */
export function planGroup(group: readonly (readonly SerialisedAppend[])[], state: GroupState): GroupPlan {
  const tips = new Map(state.tips);
  const taken = new Set(state.takenIds);
  const tipsBefore = new Map<string, number | undefined>();
  const writes: EventToWrite[] = [];
  let head = state.head;
  const outcomes = group.map((entries): AppendOutcome => {
    try {
      const planned = planAppend(entries, { tips, taken, head, recordedAt: state.recordedAt });
      for (const entry of entries) if (!tipsBefore.has(entry.streamId)) tipsBefore.set(entry.streamId, tips.get(entry.streamId)?.revision);
      for (const [streamId, tip] of planned.tips) tips.set(streamId, tip);
      for (const write of planned.writes) taken.add(write.event.id);
      writes.push(...planned.writes);
      head = planned.head;
      return { results: planned.results, events: planned.writes.map((write) => write.event) };
    } catch (error) {
      return { error };
    }
  });
  return { outcomes, writes, tipsBefore, head: state.head };
}

interface AppendState {
  readonly tips: ReadonlyMap<string, StreamTip>;
  readonly taken: ReadonlySet<string>;
  readonly head: number;
  readonly recordedAt: string;
}

/** One append (every entry of it, or none): throws the port's error when it must be refused. */
function planAppend(
  entries: readonly SerialisedAppend[],
  state: AppendState,
): { results: AppendResult[]; writes: EventToWrite[]; tips: Map<string, StreamTip>; head: number } {
  const tips = new Map<string, StreamTip>();
  const writes: EventToWrite[] = [];
  const results: AppendResult[] = [];
  let position = state.head;
  for (const entry of entries) {
    const from = writes.length;
    const tip = state.tips.get(entry.streamId);
    if (!expectedRevisionHolds(entry.expected, tip?.revision)) throw new WrongExpectedRevisionError(entry.streamId, entry.expected, tip?.revision);
    const withIds = entry.events.map((event) => ({ ...event, id: event.id ?? newEventId() }));
    for (const event of withIds) if (state.taken.has(event.id)) throw new DuplicateEventIdError(entry.streamId, event.id);
    const links = linkEvents(entry.streamId, tip, withIds, state.recordedAt);
    withIds.forEach((event, i) => {
      position += 1;
      const link = links[i]!;
      writes.push({
        event: {
          streamId: entry.streamId,
          revision: link.revision,
          position,
          id: event.id,
          type: event.type,
          data: event.dataValue,
          metadata: event.metadataValue,
          recordedAt: state.recordedAt,
          prev: link.prev,
          hash: link.hash,
        },
        metadataText: event.metadata,
      });
    });
    const last = links.at(-1)!;
    tips.set(entry.streamId, { revision: last.revision, hash: last.hash });
    results.push({ streamId: entry.streamId, nextExpectedRevision: last.revision, position, events: writes.slice(from).map((write) => write.event) });
  }
  return { results, writes, tips, head: position };
}

/**
 * The one multi-stream append that writes a plan, all or nothing: each port stream's events with the stream's exact
 * last revision, each event id's stream expected absent (a stored id makes the server refuse the whole append), and
 * the events again in the log, expected to end at the head the plan was made on (another writer's append in between
 * makes the server refuse it). One request per stream, as the client sends one expected state per stream.
 */
export function appendRequests(plan: GroupPlan, names: StreamNames): AppendStreamRequest[] {
  const byStream = new Map<string, EventData[]>();
  for (const write of plan.writes) {
    const records = byStream.get(write.event.streamId);
    if (records === undefined) byStream.set(write.event.streamId, [streamRecord(write)]);
    else records.push(streamRecord(write));
  }
  const requests: AppendStreamRequest[] = [...byStream].map(([streamId, events]) => ({
    streamName: names.stream(streamId),
    expectedState: exactStreamState(plan.tipsBefore.get(streamId)),
    events,
  }));
  for (const write of plan.writes) {
    requests.push({ streamName: names.eventId(write.event.id), expectedState: NO_STREAM, events: [eventIdRecord(write.event)] });
  }
  requests.push({
    streamName: names.log,
    expectedState: exactStreamState(plan.head === 0 ? undefined : plan.head - 1),
    events: plan.writes.map(logRecord),
  });
  return requests;
}
