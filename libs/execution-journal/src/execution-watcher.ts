import { executionIdOfStream, type ExecutionId, type ExecutionState } from '@oncegate/domain';
import type { EventStore, Subscription } from '@oncegate/event-store';
import { loadExecution, type LoadedExecution } from './execution-journal';

/**
 * Lets a caller wait until an execution reaches a state it can answer with. One live subscription over the
 * execution streams wakes the waiters of the stream that changed; each waiter re-reads its stream, so a wake-up
 * is only a hint and can never be wrong.
 */
export class ExecutionWatcher {
  private readonly waiters = new Map<string, Set<() => void>>();
  private subscription: Subscription | undefined;

  constructor(private readonly store: EventStore) {}

  async start(): Promise<void> {
    if (this.subscription) return;
    this.subscription = this.store.subscribeToAll(
      (event) => {
        const waiting = this.waiters.get(event.streamId);
        if (waiting) for (const wake of [...waiting]) wake();
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
   */
  async waitUntil(
    executionId: ExecutionId,
    ready: (state: ExecutionState) => boolean,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<LoadedExecution> {
    const stream = `execution-${executionId}`;
    if (executionIdOfStream(stream) !== executionId) throw new Error(`not an execution id: ${executionId}`);
    const deadline = Date.now() + timeoutMs;
    let changed = false;
    let wake: () => void = () => undefined;
    const onChange = () => {
      changed = true;
      wake();
    };
    const set = this.waiters.get(stream) ?? new Set();
    set.add(onChange);
    this.waiters.set(stream, set);
    try {
      for (;;) {
        changed = false;
        const execution = await loadExecution(this.store, executionId);
        const remaining = deadline - Date.now();
        if (ready(execution.state) || remaining <= 0 || signal?.aborted) return execution;
        if (changed) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, remaining);
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            resolve();
          };
          wake = done;
          signal?.addEventListener('abort', done, { once: true });
        });
        wake = () => undefined;
      }
    } finally {
      set.delete(onChange);
      if (set.size === 0) this.waiters.delete(stream);
    }
  }
}
