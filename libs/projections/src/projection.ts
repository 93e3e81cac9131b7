/**
 * What an analyst's projection is: a pure fold over recorded events plus the table it produces. The runner
 * (`run-projection.ts`) feeds it, checkpoints it and writes its rows; the projection itself does no I/O.
 */
import type { RecordedEvent } from '@oncegate/event-store';

/** One cell of a result table: what CSV and JSON can both carry without loss. */
export type ProjectionCell = string | number | boolean | null;

export type ProjectionRow = Record<string, ProjectionCell>;

/** Which events a projection wants; the store applies it on read, a journal file is filtered while read. */
export interface ProjectionFilter {
  /** Only streams whose id starts with one of these prefixes (e.g. `execution-`). */
  readonly streamPrefixes?: string[];
  /** Only events of these types. */
  readonly eventTypes?: string[];
}

export interface Projection<State> {
  /** Short, kebab-case; stored in checkpoints so a checkpoint is never resumed by another projection. */
  readonly name: string;
  readonly description: string;
  readonly filter?: ProjectionFilter;
  /** The state before any event. Must be JSON-serialisable: checkpoints store it as JSON. */
  initialState(): State;
  /** Pure: folds one event into the state. May return the same object mutated or a new one. */
  evolve(state: State, event: RecordedEvent): State;
  /** The tabular result. */
  rows(state: State): ProjectionRow[];
}

/** True when the filter lets the event through (no filter: everything). */
export function matchesFilter(filter: ProjectionFilter | undefined, event: RecordedEvent): boolean {
  if (filter === undefined) return true;
  const { streamPrefixes, eventTypes } = filter;
  if (streamPrefixes !== undefined && !streamPrefixes.some((prefix) => event.streamId.startsWith(prefix))) return false;
  if (eventTypes !== undefined && !eventTypes.includes(event.type)) return false;
  return true;
}
