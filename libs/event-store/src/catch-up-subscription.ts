import { validateCount, validateFilter, validatePosition } from './append-validation';
import type { EventFilter, EventHandler, ReadAllOptions, ReadAllPage, RecordedEvent, SubscribeOptions, Subscription } from './event-store';
import { backoffMs } from './backoff';
import { pause } from './abortable';
import { EventStoreUnavailableError } from './errors';

/** What an adapter offers so the shared catch-up loop can run on it. */
export interface SubscriptionSource {
  readAll(options: ReadAllOptions): Promise<ReadAllPage>;
  headPosition(): Promise<number>;
  readCheckpoint(consumer: string): Promise<number | undefined>;
  storeCheckpoint(consumer: string, position: number): Promise<void>;
  /**
   * Resolves once an event after `position` may have been committed (or at once when one already is),
   * or when `signal` aborts. Spurious wake-ups are allowed; missed ones are not. With `filter`, an adapter
   * that knows what it committed may skip waking for events the filter would not return. `onIdle` is called
   * when nothing after `position` is committed yet, just before it starts waiting.
   */
  waitForAppend(position: number, signal: AbortSignal, filter?: EventFilter, onIdle?: () => void): Promise<void>;
  /**
   * Optional: the events this process commits, handed over as they commit so a subscriber at the head needs no
   * read. Opened once, before the subscription's first read, and closed when it ends.
   */
  openLiveFeed?(filter?: EventFilter, unhurried?: boolean): LiveFeed;
}

/**
 * One commit (or a run of adjacent commits) of this process: every event at a position in `(after, last]`,
 * those the feed's filter takes in `events`, in position order. Because the range is complete, a subscriber
 * whose position lies in `[after, last)` may take it instead of reading; one further back may not, since
 * another process may have committed below `after`.
 */
export interface LiveSegment {
  readonly after: number;
  readonly last: number;
  readonly events: readonly RecordedEvent[];
}

/** A subscriber's queue of {@link LiveSegment}s. */
export interface LiveFeed {
  /**
   * The oldest queued segment; `'read'` when the store must be read (another process committed, or the queue
   * overflowed and was dropped); `undefined` when nothing is queued.
   */
  take(): LiveSegment | 'read' | undefined;
  /** Resolves once `take` has something that may matter (or `signal` aborts); `onIdle` first when it must wait. */
  wait(signal: AbortSignal, onIdle: () => void): Promise<void>;
  close(): void;
}

const DEFAULT_PAGE_SIZE = 1000;
const DEFAULT_CHECKPOINT_EVERY_MS = 1000;

/**
 * One catch-up loop for every adapter: read pages after the last position until a read comes back
 * empty, then wait for the next commit and read again from the same position. Because every read
 * continues strictly after the last position seen, turning live can neither skip nor repeat an event,
 * provided the adapter's global positions only become visible in order (SQLite's single writer and
 * the other adapters' own mechanisms ensure that). At the head, an adapter that offers a live feed hands over
 * its own process's commits instead; a commit is taken only when it starts at or below the subscriber's position
 * (nothing can lie between), so the feed can never skip another process's event either.
 */
export function runCatchUpSubscription(
  source: SubscriptionSource,
  handler: EventHandler,
  options: SubscribeOptions = {},
): Subscription {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const checkpointEveryMs = options.checkpointEveryMs ?? DEFAULT_CHECKPOINT_EVERY_MS;
  validateCount(pageSize, 'pageSize');
  validatePosition(checkpointEveryMs, 'checkpointEveryMs');
  validateFilter(options.filter);
  if (typeof options.from === 'object') validatePosition(options.from.after, 'from.after');

  const stopper = new AbortController();
  let position = 0;
  let markCaughtUp!: () => void;
  const caughtUp = new Promise<void>((resolve) => (markCaughtUp = resolve));

  const startPosition = async (): Promise<number> => {
    const from = options.from;
    if (from === 'end') return source.headPosition();
    if (from === 'start') return 0;
    if (typeof from === 'object') return from.after;
    if (options.consumer !== undefined) return (await source.readCheckpoint(options.consumer)) ?? 0;
    return 0;
  };

  // Opened before the first read, so a commit made after that read is queued and wakes the subscriber.
  const feed = source.openLiveFeed?.(options.filter, options.unhurried === true);

  const loop = async (): Promise<void> => {
    position = await startPosition();
    let checkpointed = position;
    let checkpointedAt = Date.now();
    /** Whether `checkpoint(force)` writes now: asked first where most segments need none, so they make no promise. */
    const checkpointDue = (force: boolean) =>
      options.consumer !== undefined && position !== checkpointed && (force || Date.now() - checkpointedAt >= checkpointEveryMs);
    const checkpoint = async (force: boolean) => {
      if (!checkpointDue(force)) return;
      try {
        // Due only with a consumer (`checkpointDue`).
        await source.storeCheckpoint(options.consumer!, position);
      } catch (error) {
        // A checkpoint only saves work at the next start: while the store cannot write, keep going and try later.
        if (error instanceof EventStoreUnavailableError) return;
        throw error;
      }
      checkpointed = position;
      checkpointedAt = Date.now();
    };
    /**
     * At the head: takes this process's commits from the feed for as long as each continues exactly where the
     * subscriber is; returns (to read) at the first gap, when another process committed, or when the queue overflowed.
     */
    const live = async (feed: LiveFeed): Promise<void> => {
      while (!stopper.signal.aborted) {
        const segment = feed.take();
        if (segment === 'read') return;
        if (segment === undefined) {
          await feed.wait(stopper.signal, markCaughtUp);
          continue;
        }
        if (segment.last <= position) continue;
        if (segment.after > position) return;
        for (const event of segment.events) {
          if (event.position <= position) continue;
          if (stopper.signal.aborted) return;
          // A handler done without waiting (most deliveries to a service the event is not for) costs no turn.
          const handling = handler(event);
          if (handling !== undefined) await handling;
          position = event.position;
        }
        if (stopper.signal.aborted) return;
        position = segment.last;
        if (checkpointDue(false)) await checkpoint(false);
      }
    };
    /** Reads the next page; while the store cannot be reached, waits and reads again (the subscription outlives an outage). */
    const nextPage = async (): Promise<ReadAllPage | undefined> => {
      for (let failures = 0; ; failures += 1) {
        try {
          return await source.readAll({ after: position, maxCount: pageSize, filter: options.filter });
        } catch (error) {
          if (!(error instanceof EventStoreUnavailableError) || stopper.signal.aborted) throw error;
          await pause(backoffMs(failures, 50, 2_000), stopper.signal);
          if (stopper.signal.aborted) return undefined;
        }
      }
    };
    try {
      while (!stopper.signal.aborted) {
        const page = await nextPage();
        if (page === undefined) break;
        for (const event of page.events) {
          if (stopper.signal.aborted) break;
          const handling = handler(event);
          if (handling !== undefined) await handling;
          position = event.position;
        }
        if (stopper.signal.aborted) break;
        if (page.lastPosition > position) position = page.lastPosition;
        await checkpoint(false);
        // A page that was not full read what was there; the wait returns at once if more was committed meanwhile.
        if (page.events.length < pageSize) {
          if (feed === undefined) {
            await source.waitForAppend(position, stopper.signal, options.filter, markCaughtUp).catch((error: unknown) => {
              // The next read finds out whether the store is back.
              if (!(error instanceof EventStoreUnavailableError)) throw error;
            });
          } else await live(feed);
        }
      }
    } finally {
      markCaughtUp();
      await checkpoint(true);
    }
  };

  // The feed is closed however the loop ends, even when it fails before its first read.
  const done = loop().finally(() => feed?.close());
  // The caller observes failures through `done`; an unobserved rejection must not crash the process.
  done.catch(() => undefined);

  return {
    caughtUp,
    done,
    get position() {
      return position;
    },
    async stop() {
      stopper.abort();
      await done.catch(() => undefined);
    },
  };
}

