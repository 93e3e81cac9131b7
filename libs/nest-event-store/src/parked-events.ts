import { parkedStream } from '@oncegate/domain';
import { newEventId, type EventStore, type RecordedEvent } from '@oncegate/event-store';

/**
 * Parked events (docs/event-store.md, "Parked events"): an event a service's handler kept failing on is set aside
 * with its error on the consumer's `parked-<consumer>` stream, never skipped in silence, and every later event of
 * the same stream waits behind it (parked too, in order), so no step of an execution runs before an earlier one.
 * An operator replays it once the fault is fixed; the ones behind it follow in order.
 */
export const PARKED_EVENT_TYPES = {
  parked: 'EventParked',
  replayRequested: 'ParkedReplayRequested',
  handled: 'ParkedEventHandled',
  replayFailed: 'ParkedReplayFailed',
} as const;

export interface EventParkedData {
  readonly consumer: string;
  /** The event set aside: where it is in the journal. */
  readonly position: number;
  readonly eventId: string;
  readonly streamId: string;
  readonly revision: number;
  readonly type: string;
  /** Why: the handler's last error, or that it waits behind an earlier parked event of its stream. */
  readonly error: string;
  readonly attempts: number;
  /** Set when the event itself never failed: the parked event of its stream it waits behind. */
  readonly behind: string | null;
}

/** Data of a `ParkedReplayRequested` event: an operator asks the consumer to handle these parked events again. */
export interface ParkedReplayRequestedData {
  /** Ids of the `EventParked` events to replay, each the first parked event of its stream. */
  readonly parkedIds: readonly string[];
  readonly by: string;
}

/** Data of a `ParkedEventHandled` event: a replay of the parked event succeeded; it is parked no more. */
export interface ParkedEventHandledData {
  readonly parkedId: string;
}

/** Data of a `ParkedReplayFailed` event: a replay failed again; the event stays parked. */
export interface ParkedReplayFailedData {
  readonly parkedId: string;
  /** The handler's error on the replay. */
  readonly error: string;
}

/** The data each record of a parked stream carries. */
export interface ParkedEventDataOf {
  readonly EventParked: EventParkedData;
  readonly ParkedReplayRequested: ParkedReplayRequestedData;
  readonly ParkedEventHandled: ParkedEventHandledData;
  readonly ParkedReplayFailed: ParkedReplayFailedData;
}

/** One parked event as an operator sees it; `parkedId` is the id of its `EventParked`. */
export interface ParkedEvent extends EventParkedData {
  readonly parkedId: string;
  readonly parkedAt: string;
  /** The last failed replay, if any. */
  readonly lastReplayError: string | null;
  /** A replay is asked for and not yet done. */
  readonly replayRequested: boolean;
}

/** What a consumer's parked stream says: the events still parked, in journal order. */
export interface ParkedState {
  readonly open: readonly ParkedEvent[];
  /** Last revision of the parked stream (`undefined`: none). */
  readonly revision: number | undefined;
}

export async function readParked(store: EventStore, consumer: string): Promise<ParkedState> {
  return foldParked(await store.readStream(parkedStream(consumer)));
}

export function foldParked(events: readonly RecordedEvent[]): ParkedState {
  const open = new Map<string, ParkedEvent>();
  for (const event of events) {
    const data = event.data as Record<string, unknown>;
    switch (event.type) {
      case PARKED_EVENT_TYPES.parked:
        open.set(event.id, { ...(data as unknown as EventParkedData), parkedId: event.id, parkedAt: event.recordedAt, lastReplayError: null, replayRequested: false });
        break;
      case PARKED_EVENT_TYPES.replayRequested:
        for (const id of data['parkedIds'] as string[]) {
          const parked = open.get(id);
          if (parked !== undefined) open.set(id, { ...parked, replayRequested: true });
        }
        break;
      case PARKED_EVENT_TYPES.handled:
        open.delete(data['parkedId'] as string);
        break;
      case PARKED_EVENT_TYPES.replayFailed: {
        const parked = open.get(data['parkedId'] as string);
        if (parked !== undefined) open.set(parked.parkedId, { ...parked, lastReplayError: data['error'] as string, replayRequested: false });
        break;
      }
    }
  }
  // An event that waited behind one handled since then waits behind nothing: it is its stream's first now.
  const ordered = [...open.values()]
    .map((parked) => (parked.behind !== null && !open.has(parked.behind) ? { ...parked, behind: null } : parked))
    .sort((a, b) => a.position - b.position);
  return { open: ordered, revision: events.at(-1)?.revision };
}

/** Appends one record to the consumer's parked stream. */
export async function appendParked<TType extends keyof ParkedEventDataOf>(
  store: EventStore,
  consumer: string,
  type: TType,
  data: ParkedEventDataOf[TType],
  actor: string,
): Promise<string> {
  const eventId = newEventId();
  await store.appendToStream(parkedStream(consumer), [
    { id: eventId, type, data, metadata: { eventId, actor, recordedAt: new Date().toISOString(), schemaVersion: 1 } },
  ]);
  return eventId;
}

/** Why a replay cannot be asked for one of the named events. */
export class ParkedReplayRefusal extends Error {
  constructor(readonly parkedId: string, reason: string) {
    super(`${parkedId}: ${reason}`);
    this.name = 'ParkedReplayRefusal';
  }
}

/**
 * Asks the consumer's running service to handle the named parked events again (each the first parked event of
 * its stream; the ones behind it follow once it is handled). Refused for an id that is not parked, or that waits
 * behind another.
 */
export async function requestReplay(store: EventStore, consumer: string, parkedIds: readonly string[] | 'all', by: string): Promise<string[]> {
  const { open } = await readParked(store, consumer);
  const heads = open.filter((parked) => parked.behind === null);
  let ids: string[];
  if (parkedIds === 'all') {
    ids = heads.map((parked) => parked.parkedId);
  } else {
    for (const id of parkedIds) {
      const parked = open.find((candidate) => candidate.parkedId === id);
      if (parked === undefined) throw new ParkedReplayRefusal(id, `no event of ${consumer} is parked under this id`);
      if (parked.behind !== null) throw new ParkedReplayRefusal(id, `it waits behind ${parked.behind}; replay that one and it follows`);
    }
    ids = [...parkedIds];
  }
  if (ids.length > 0) await appendParked(store, consumer, PARKED_EVENT_TYPES.replayRequested, { parkedIds: ids, by }, by);
  return ids;
}
