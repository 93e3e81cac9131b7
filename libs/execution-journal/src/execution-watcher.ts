import { executionIdOfStream, type ExecutionId, type ExecutionState } from '@oncegate/domain';
import type { EventStore, Subscription } from '@oncegate/event-store';
import { cachedHolding, foldRecorded, loadExecution, type LoadedExecution, type StreamEventAt } from './execution-journal';

interface Waiter {
  readonly ready: (state: ExecutionState) => boolean;
  readonly settle: (execution: LoadedExecution) => void;
}

/** The waiters of one execution, and whether a re-read for them is running or must run again. */
interface Watched {
  readonly waiters: Set<Waiter>;
  refreshing: boolean;
  again: boolean;
}

/**
 * Lets a caller wait until an execution reaches a state it can answer with. One live subscription over the
 * execution streams delivers each committed event; when it continues the execution's cached fold exactly (the
 * revision after the cached one), the fold is extended with it and the waiters are checked against that, with no
 * read. Otherwise the stream is read once for all of its waiters (a burst of callers waiting on one execution
 * costs one read per change, not one per caller), and each waiter is checked against what was read.
 */
export class ExecutionWatcher {
  private readonly watched = new Map<ExecutionId, Watched>();
  private subscription: Subscription | undefined;

  constructor(private readonly store: EventStore) {}

  async start(): Promise<void> {
    if (this.subscription) return;
    this.subscription = this.store.subscribeToAll(
      (event) => {
        const executionId = executionIdOfStream(event.streamId);
        if (executionId === undefined) return;
        // Every delivered event extends the cached fold it continues, so later loads read nothing or little.
        const extended = foldRecorded(this.store, executionId, event);
        const watched = this.watched.get(executionId);
        if (watched === undefined) return;
        if (extended !== undefined && !watched.refreshing && extended.revision === event.revision) {
          for (const waiter of [...watched.waiters]) if (waiter.ready(extended.state)) waiter.settle(extended);
        } else {
          this.refresh(executionId, watched);
        }
      },
      { from: 'end', filter: { streamPrefixes: ['execution-'] } },
    );
    await this.subscription.caughtUp;
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }

  /**
   * Resolves with the execution once `ready(state)` holds, or with its latest state when `timeoutMs` passes or
   * `signal` aborts, whichever comes first.
   *
   * `appended`: an event of the execution this process appended itself (the call's `ExecutionAccepted`). Its stream
   * then began in this process's sight: the watcher's subscription delivers every event of it in commit order and
   * extends the cached fold with each, so a fold that holds `appended` is the stream as far as the subscription has
   * delivered, and whatever commits after it wakes the waiter. The first read is then skipped. Without it (or when
   * the fold was let go), the stream is read once first, as for an execution another process started.
   */
  async waitUntil(
    executionId: ExecutionId,
    ready: (state: ExecutionState) => boolean,
    timeoutMs: number,
    signal?: AbortSignal,
    appended?: StreamEventAt,
  ): Promise<LoadedExecution> {
    if (executionIdOfStream(`execution-${executionId}`) !== executionId) throw new Error(`not an execution id: ${executionId}`);
    let settle: (execution: LoadedExecution | undefined) => void = () => undefined;
    const settled = new Promise<LoadedExecution | undefined>((resolve) => (settle = resolve));
    const waiter: Waiter = { ready, settle };
    // Registered before the first read: a change committed after that read wakes the waiter.
    const watched = this.watched.get(executionId) ?? { waiters: new Set<Waiter>(), refreshing: false, again: false };
    watched.waiters.add(waiter);
    this.watched.set(executionId, watched);
    const timer = setTimeout(() => settle(undefined), Math.max(0, timeoutMs));
    const onAbort = () => settle(undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const first = (appended === undefined || this.subscription === undefined ? undefined : cachedHolding(this.store, executionId, appended)) ?? (await loadExecution(this.store, executionId));
      if (ready(first.state) || signal?.aborted || timeoutMs <= 0) return first;
      return (await settled) ?? (await loadExecution(this.store, executionId));
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      watched.waiters.delete(waiter);
      if (watched.waiters.size === 0 && this.watched.get(executionId) === watched) this.watched.delete(executionId);
    }
  }

  /** Reads the execution once for all its waiters; a change while reading makes it read once more. */
  private refresh(executionId: ExecutionId, watched: Watched): void {
    if (watched.refreshing) {
      watched.again = true;
      return;
    }
    watched.refreshing = true;
    void (async () => {
      try {
        do {
          watched.again = false;
          const execution = await loadExecution(this.store, executionId);
          for (const waiter of [...watched.waiters]) if (waiter.ready(execution.state)) waiter.settle(execution);
        } while (watched.again && watched.waiters.size > 0);
      } catch {
        // A failed read wakes nobody; each waiter still ends at its timeout with the state read then.
      } finally {
        watched.refreshing = false;
      }
    })();
  }
}
