import type { EventFilter, ReadAllOptions, ReadAllPage, RecordedEvent } from './event-store';

export interface ReadAllFromOptions {
  /** Read strictly after this global position. Default: 0 (from the start). */
  readonly after?: number;
  readonly filter?: EventFilter;
  /** Events read per `readAll` page. Default: 1000. */
  readonly pageSize?: number;
  /** Read no further than this global position: later events are not yielded and no page is read past it. */
  readonly to?: number;
}

/** The events of a forward read of the whole store, and how far it has read. */
export interface AllEventsRead extends AsyncIterable<RecordedEvent> {
  /**
   * Where a later read continues (`after: position`): while an event is handled, its position; once the
   * iteration ends, the last position examined, past filtered-out events (capped at `to`). After a `break`,
   * the position of the last event handed out.
   */
  readonly position: number;
}

const DEFAULT_PAGE_SIZE = 1000;

/**
 * Reads every event committed after `options.after`, page by page, in global order, until a page examines
 * nothing new (the end of the store as it is at that moment) or `options.to` is reached. Each page continues
 * strictly after the last position examined, so a filtered read moves past events it does not want.
 * Iterating again continues from `position`.
 */
export function readAllFrom(
  store: { readAll(options: ReadAllOptions): Promise<ReadAllPage> },
  options: ReadAllFromOptions = {},
): AllEventsRead {
  const { filter, to } = options;
  const maxCount = options.pageSize ?? DEFAULT_PAGE_SIZE;
  let position = options.after ?? 0;
  return {
    get position() {
      return position;
    },
    async *[Symbol.asyncIterator]() {
      while (to === undefined || position < to) {
        const after = position;
        const page = await store.readAll({ after, maxCount, ...(filter === undefined ? {} : { filter }) });
        for (const event of page.events) {
          if (to !== undefined && event.position > to) {
            position = to;
            return;
          }
          position = event.position;
          yield event;
        }
        // A filtered page may hold no events and still have advanced; a page that examined nothing is the end.
        if (page.lastPosition <= after) return;
        position = to === undefined ? page.lastPosition : Math.min(page.lastPosition, to);
      }
    },
  };
}
