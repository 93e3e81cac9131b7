import type { EventStore } from '../event-store';

/** Two store objects on one new store, as two processes hold it; `close` closes both and removes the store. */
export interface StorePair<Store extends EventStore = EventStore> {
  readonly first: Store;
  readonly second: Store;
  close(): Promise<void>;
}

/** The pair of `first` and `second`, whose `close` closes both, then runs `remove`. */
export function storePair<Store extends EventStore>(first: Store, second: Store, remove: () => void | Promise<void>): StorePair<Store> {
  return {
    first,
    second,
    async close() {
      await first.close();
      await second.close();
      await remove();
    },
  };
}
