import type { EventFilter, ReadAllPage, RecordedEvent } from '@oncegate/event-store';

/** Whether the port's filter takes an event: one of the stream prefixes (if any) and one of the types (if any). */
export function filterTakes(filter: EventFilter | undefined, event: RecordedEvent): boolean {
  if (filter === undefined) return true;
  const { streamPrefixes, eventTypes } = filter;
  if (streamPrefixes !== undefined && streamPrefixes.length > 0 && !streamPrefixes.some((prefix) => event.streamId.startsWith(prefix))) return false;
  return eventTypes === undefined || eventTypes.length === 0 || eventTypes.includes(event.type);
}

/**
 * A forward page from the log records read after `after` (in position order, as they arrive): the events the filter takes, at most
 * `maxCount`. A full page ends at its last event; otherwise the read examined everything it was given, and
 * `lastPosition` is the last position examined (or `after` when there was none), so a filtered reader moves past what
 * it skipped.
 */
export async function forwardPage(
  records: AsyncIterable<RecordedEvent> | Iterable<RecordedEvent>,
  after: number,
  maxCount: number,
  filter?: EventFilter,
): Promise<ReadAllPage> {
  const events: RecordedEvent[] = [];
  let examined = after;
  // Leaving the loop once the page is full ends the read: the rest of the window is never fetched.
  for await (const event of records) {
    examined = event.position;
    if (!filterTakes(filter, event)) continue;
    events.push(event);
    if (events.length === maxCount) return { events, lastPosition: event.position };
  }
  return { events, lastPosition: Math.max(after, examined) };
}

/**
 * A backward page from the log records read down from position `from` (in descending order). A full page ends at its
 * last event; otherwise `lastPosition` is the lowest position examined, and `from + 1` when nothing was, as the other
 * adapters report it: a reader continues with `before: lastPosition`.
 */
export async function backwardPage(
  records: AsyncIterable<RecordedEvent> | Iterable<RecordedEvent>,
  from: number,
  maxCount: number,
  filter?: EventFilter,
): Promise<ReadAllPage> {
  const events: RecordedEvent[] = [];
  let examined = from + 1;
  for await (const event of records) {
    examined = event.position;
    if (!filterTakes(filter, event)) continue;
    events.push(event);
    if (events.length === maxCount) return { events, lastPosition: event.position };
  }
  return { events, lastPosition: examined };
}
