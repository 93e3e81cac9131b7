import { validateCount, validatePosition } from './append-validation';
import type { EventLink, EventStore, ReadLinksOptions } from './event-store';

const DEFAULT_COUNT = 1000;

/**
 * The positions and hashes of the events after `options.after`, in global order (at most `maxCount`): through the
 * adapter's `readLinks` when it has one (no event data read or parsed), else from a `readAll` page.
 */
export async function readLinks(store: EventStore, options: ReadLinksOptions = {}): Promise<EventLink[]> {
  if (store.readLinks !== undefined) return store.readLinks(options);
  const after = options.after ?? 0;
  const maxCount = options.maxCount ?? DEFAULT_COUNT;
  validatePosition(after, 'after');
  validateCount(maxCount, 'maxCount');
  const page = await store.readAll({ after, maxCount });
  return page.events.map((event) => ({ position: event.position, hash: event.hash }));
}
