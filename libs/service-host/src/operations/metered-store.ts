import type { EventStore } from '@oncegate/event-store';
import type { ProcessMetrics } from './process-metrics';

/** The store with every append timed and its size counted; everything else passes through untouched. */
export function meteredStore<S extends EventStore>(store: S, metrics: ProcessMetrics): S {
  const timed = async <T>(events: number, append: () => Promise<T>): Promise<T> => {
    const stop = metrics.storeAppendSeconds.startTimer();
    const result = await append();
    stop();
    metrics.storeAppendEvents.observe(events);
    return result;
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'appendToStream') {
        return (streamId: string, events: Parameters<EventStore['appendToStream']>[1], options?: Parameters<EventStore['appendToStream']>[2]) =>
          timed(events.length, () => target.appendToStream(streamId, events, options));
      }
      if (property === 'appendMany') {
        return (batch: Parameters<EventStore['appendMany']>[0]) => timed(batch.reduce((sum, entry) => sum + entry.events.length, 0), () => target.appendMany(batch));
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
