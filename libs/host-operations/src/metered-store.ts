import { EXECUTION_EVENT_TYPES } from '@oncegate/domain';
import type { EventStore, EventToAppend } from '@oncegate/event-store';
import type { ProcessMetrics } from './process-metrics';

const EXECUTION_TYPES: ReadonlySet<string> = new Set(EXECUTION_EVENT_TYPES);

/** The store with every append timed and its size counted; everything else passes through untouched. */
export function meteredStore<S extends EventStore>(store: S, metrics: ProcessMetrics): S {
  // Each type's counter, looked up once: a labelled `inc` hashes its labels every time.
  const executionEvents = new Map([...EXECUTION_TYPES].map((type) => [type, metrics.executionEvents.labels({ type })]));
  /** What an append that took since `startedMs` is counted as (no timer closure per append: appends are on every call's path). */
  const appended = (startedMs: number, events: readonly EventToAppend[]) => {
    metrics.storeAppendSeconds.observe((performance.now() - startedMs) / 1000);
    metrics.storeAppendEvents.observe(events.length);
    // An execution's events say where it went: accepted, authorized, dispatched, completed, held for review…
    for (const event of events) executionEvents.get(event.type)?.inc();
  };
  // The two appends are timed; every other method is the store's own, bound once (the store is on every call's path).
  const methods = new Map<PropertyKey, unknown>([
    [
      'appendToStream',
      async (streamId: string, events: Parameters<EventStore['appendToStream']>[1], options?: Parameters<EventStore['appendToStream']>[2]) => {
        const startedMs = performance.now();
        const result = await store.appendToStream(streamId, events, options);
        appended(startedMs, events);
        return result;
      },
    ],
    [
      'appendMany',
      async (batch: Parameters<EventStore['appendMany']>[0]) => {
        const startedMs = performance.now();
        const results = await store.appendMany(batch);
        appended(startedMs, batch.flatMap((entry) => entry.events));
        return results;
      },
    ],
  ]);
  return new Proxy(store, {
    get(target, property) {
      const method = methods.get(property);
      if (method !== undefined) return method;
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      methods.set(property, bound);
      return bound;
    },
  });
}
