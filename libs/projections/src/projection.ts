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

/** The values of a run's `--param key=value`, by key, defaults applied. */
export type ProjectionParams = Readonly<Record<string, string>>;

/** A parameter a projection takes: what it means, and its value when the run gives none (without one it is required). */
export interface ProjectionParam {
  readonly description: string;
  readonly default?: string;
}

export interface Projection<State> {
  /** Short, kebab-case; stored in checkpoints so a checkpoint is never resumed by another projection. */
  readonly name: string;
  readonly description: string;
  readonly filter?: ProjectionFilter;
  /** The parameters it takes (`--param key=value`); a run naming another is refused, as one missing a required one. */
  readonly params?: Readonly<Record<string, ProjectionParam>>;
  /**
   * The columns that identify a row (e.g. `['executionId']`). Optional: with it, a run into a SQL table (`--into`)
   * writes only the rows that changed since its last batch; without it, each batch replaces the table's rows.
   * Every row must then hold a value in each key column, and no two rows the same key.
   */
  readonly key?: readonly string[];
  /**
   * The state before any event. Must be plain JSON (objects, arrays, strings, finite numbers, booleans, null):
   * checkpoints store it as JSON, and a state holding anything else (a Map, a Set, a Date) is refused when checkpointed.
   */
  initialState(params: ProjectionParams): State;
  /** Pure: folds one event into the state. May return the same object mutated or a new one. */
  evolve(state: State, event: RecordedEvent, params: ProjectionParams): State;
  /** The tabular result. */
  rows(state: State, params: ProjectionParams): ProjectionRow[];
}

/**
 * Where a value is not plain JSON, as `state.byActor` or `state.list[3]`, and what it is; `undefined` when it is. A
 * Map or a Set would be written as `{}` and lose everything in it.
 */
export function jsonProblem(value: unknown, path = 'state'): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} is ${value}, which JSON cannot hold`;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const problem = jsonProblem(item, `${path}[${index}]`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  if (typeof value === 'object') {
    const prototype = Object.getPrototypeOf(value) as object | null;
    if (prototype !== Object.prototype && prototype !== null) {
      const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? 'an object of a class';
      return `${path} is a ${kind}, which JSON cannot hold${kind === 'Map' ? ' (it would be checkpointed as {}): use a plain object keyed by string' : kind === 'Set' ? ': use an array or an object' : ''}`;
    }
    for (const [key, item] of Object.entries(value)) {
      const problem = jsonProblem(item, /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  return `${path} is ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`}, which JSON cannot hold`;
}

/** True when the filter lets the event through (no filter: everything). */
export function matchesFilter(filter: ProjectionFilter | undefined, event: RecordedEvent): boolean {
  if (filter === undefined) return true;
  const { streamPrefixes, eventTypes } = filter;
  if (streamPrefixes !== undefined && !streamPrefixes.some((prefix) => event.streamId.startsWith(prefix))) return false;
  if (eventTypes !== undefined && !eventTypes.includes(event.type)) return false;
  return true;
}
