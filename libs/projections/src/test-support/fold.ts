import type { RecordedEvent } from '@oncegate/event-store';
import { matchesFilter, type Projection, type ProjectionParams } from '../projection';

/** Folds events through a projection the way the runner does (filter, evolve), with a JSON round trip of the state
 * halfway, as a checkpoint would make. */
export function fold<State>(projection: Projection<State>, events: readonly RecordedEvent[], params: ProjectionParams = {}): State {
  const half = Math.floor(events.length / 2);
  let state = projection.initialState(params);
  events.forEach((event, index) => {
    if (index === half) state = JSON.parse(JSON.stringify(state)) as State;
    if (matchesFilter(projection.filter, event)) state = projection.evolve(state, event, params);
  });
  return state;
}
