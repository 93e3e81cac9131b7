/**
 * A module projection with parameters, as an analyst writes one: the events of the streams under `prefix`, by type,
 * each row labelled with `label`. Loaded by file (loadProjectionModule), in the tests and by the follow child.
 */
import type { Projection } from '../projection';

interface State {
  readonly byType: Record<string, { events: number; lastPosition: number }>;
}

export const projection: Projection<State> = {
  name: 'events-by-type',
  description: 'events of the streams under a prefix, by type',
  params: { prefix: { description: 'stream id prefix, e.g. execution-' }, label: { description: 'a label for every row', default: 'all' } },
  key: ['type'],
  initialState: () => ({ byType: {} }),
  evolve(state, event, params) {
    if (!event.streamId.startsWith(params['prefix']!)) return state;
    const entry = Object.hasOwn(state.byType, event.type) ? state.byType[event.type]! : (state.byType[event.type] = { events: 0, lastPosition: 0 });
    entry.events += 1;
    entry.lastPosition = event.position;
    return state;
  },
  rows: (state, params) =>
    Object.entries(state.byType).map(([type, entry]) => ({ type, label: params['label']!, events: entry.events, lastPosition: entry.lastPosition, many: entry.events > 3 })),
};
