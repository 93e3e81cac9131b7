import type { ReadStreamOptions, RecordedEvent } from '@oncegate/event-store';
import { LRUCache } from 'lru-cache';

/** The last events of one stream: revisions `first` to `first + events.length - 1` (none: the stream ends at `first - 1`). */
interface Tail {
  first: number;
  events: RecordedEvent[];
}

/**
 * The latest events of the streams this process committed or read to their end, so that a read which follows is
 * answered without going to the file. The store's reading connection loses its whole page cache each time another
 * connection commits — the writer thread's included — so such a read would load its pages again for nothing.
 *
 * A tail is only as good as the promise that nobody else appended since: {@link SqliteEventStore} asks the file
 * whether anybody committed since it last looked (`data_version`), and if so which streams the events above the
 * last one it knows to be its own belong to, before it answers from here; those streams' tails are not used.
 * Bounded: `streams` tails of at most `depth` events each and `events` in all (a tail of no events counts as one),
 * the least recently used dropped first. The defaults hold what a few hundred calls wrote, the calls in flight and
 * those just answered: what a call reads back, it reads while it is under way. A tail kept longer outlives V8's
 * young generation and costs the old generation's collector a mark at every full collection until it is dropped
 * (docs/runtime.md, "Memory").
 */
export class OwnTails {
  private readonly tails: LRUCache<string, Tail>;

  constructor(
    streams = 512,
    private readonly depth = 64,
    /** Events kept in all tails together at most (about 1 KiB each in a gateway's journal). */
    events = 2_048,
  ) {
    this.tails = new LRUCache<string, Tail>({ max: streams, maxSize: events, sizeCalculation: (tail) => Math.max(1, tail.events.length) });
  }

  get size(): number {
    return this.tails.size;
  }

  has(streamId: string): boolean {
    return this.tails.has(streamId);
  }

  /** Events this process just committed to `streamId`, in revision order. */
  committed(streamId: string, events: readonly RecordedEvent[]): void {
    const firstNew = events[0]!.revision;
    const tail = this.tails.peek(streamId);
    const kept =
      tail !== undefined && tail.first + tail.events.length === firstNew
        ? { first: tail.first, events: tail.events.concat(events) }
        : { first: firstNew, events: [...events] };
    const excess = kept.events.length - this.depth;
    if (excess > 0) {
      kept.events = kept.events.slice(excess);
      kept.first += excess;
    }
    this.tails.set(streamId, kept);
  }

  /**
   * A read of the file that reached the stream's end: `events` are its last ones, in revision order, ending at
   * `last` (-1: there is no such stream). A tail kept already that ends there and holds more stays.
   */
  learned(streamId: string, events: readonly RecordedEvent[], last: number): void {
    // `get` marks a tail kept already that ends there and holds more as used last, and it stays.
    const tail = this.tails.get(streamId);
    if (tail !== undefined && tail.first + tail.events.length - 1 === last && tail.events.length >= events.length) return;
    const kept = events.length > this.depth ? events.slice(events.length - this.depth) : [...events];
    this.tails.set(streamId, { first: last + 1 - kept.length, events: kept });
  }

  /** An append to `streamId` was refused: what is kept of it may be behind the file. */
  forget(streamId: string): void {
    this.tails.delete(streamId);
  }

  clear(): void {
    this.tails.clear();
  }

  /** The stream's last revision when a tail is kept (-1: the stream does not exist). */
  revision(streamId: string): number | undefined {
    const tail = this.tails.get(streamId);
    if (tail === undefined) return undefined;
    return tail.first + tail.events.length - 1;
  }

  /**
   * `readStream`'s answer from the tail, or `undefined` when the tail does not hold all of it (the file must be
   * read then). Same validation as the store's: the caller checked the options.
   */
  read(streamId: string, options: ReadStreamOptions): RecordedEvent[] | undefined {
    const tail = this.tails.get(streamId);
    if (tail === undefined) return undefined;
    const last = tail.first + tail.events.length - 1;
    const limit = options.maxCount ?? Infinity;
    if ((options.direction ?? 'forwards') === 'forwards') {
      const from = options.fromRevision ?? 0;
      if (from > last) return [];
      if (from < tail.first) return undefined;
      const start = from - tail.first;
      return tail.events.slice(start, limit === Infinity ? undefined : start + limit);
    }
    const from = Math.min(options.fromRevision ?? last, last);
    if (from < 0) return [];
    // Backwards from `from`: the tail must reach down far enough for `limit` events, or to the stream's start.
    const wanted = Math.min(limit, from + 1);
    if (from - wanted + 1 < tail.first) return undefined;
    const end = from - tail.first + 1;
    return tail.events.slice(end - wanted, end).reverse();
  }
}
