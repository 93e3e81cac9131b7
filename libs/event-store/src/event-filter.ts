import type { EventFilter } from './event-store';

/** Whether the store's filter takes the event, as a read with that filter would (an empty list constrains nothing). */
export function matchesFilter(filter: EventFilter, event: { readonly streamId: string; readonly type: string }): boolean {
  const prefixes = filter.streamPrefixes ?? [];
  const types = filter.eventTypes ?? [];
  return (prefixes.length === 0 || prefixes.some((prefix) => event.streamId.startsWith(prefix))) && (types.length === 0 || types.includes(event.type));
}
