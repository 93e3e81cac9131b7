import { EXECUTION_EVENT_TYPES } from '@oncegate/domain';
import type { EventStore, EventToAppend } from '@oncegate/event-store';
import type { ProcessMetrics } from './process-metrics';

const EXECUTION_TYPES: ReadonlySet<string> = new Set(EXECUTION_EVENT_TYPES);

/** The store with every append timed and its size counted; everything else passes through untouched. */
export function meteredStore<S extends EventStore>(store: S, metrics: ProcessMetrics): S {
  // Each type's counter, looked up once: a labelled `inc` hashes its labels every time.
  const executionEvents = new Map([...EXECUTION_TYPES].map((type) => [type, metrics.executionEvents.labels({ type })]));
  const timed = async <T>(events: readonly EventToAppend[], append: () => Promise<T>): Promise<T> => {
    const stop = metrics.storeAppendSeconds.startTimer();
    const result = await append();
    stop();
    metrics.storeAppendEvents.observe(events.length);
    // An execution's events say where it went: accepted, authorized, dispatched, completed, held for review…
    for (const event of events) executionEvents.get(event.type)?.inc();
    return result;
  };
  // The two appends are timed; every other method is the store's own, bound once (the store is on every call's path).
  const methods = new Map<PropertyKey, unknown>([
    [
      'appendToStream',
      (streamId: string, events: Parameters<EventStore['appendToStream']>[1], options?: Parameters<EventStore['appendToStream']>[2]) =>
        timed(events, () => store.appendToStream(streamId, events, options)),
    ],
    ['appendMany', (batch: Parameters<EventStore['appendMany']>[0]) => timed(batch.flatMap((entry) => entry.events), () => store.appendMany(batch))],
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
