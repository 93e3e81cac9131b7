/**
 * Runs a projection over a source: fold from the start (or after a checkpoint), checkpoint every N events and at
 * the end, and hand back the state and its rows. Checkpoints hold the state as JSON beside the last position, so
 * a long run over a large journal resumes where it stopped.
 */
import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { RecordedEvent } from '@oncegate/event-store';
import type { ProjectionSource } from './event-sources';
import { jsonProblem, matchesFilter, type Projection, type ProjectionParams, type ProjectionRow } from './projection';

export const CHECKPOINT_FORMAT = 'oncegate-projection-checkpoint/1';
export const DEFAULT_CHECKPOINT_EVERY = 1000;

export interface ProjectionCheckpoint<State> {
  readonly format: typeof CHECKPOINT_FORMAT;
  readonly projection: string;
  /** Global position of the last event folded into `state`. */
  readonly position: number;
  /** Events folded into `state` since the projection started from its beginning. */
  readonly events: number;
  /** The parameters the state was folded with (absent in checkpoints of projections without any). */
  readonly params?: ProjectionParams;
  readonly state: State;
}

export interface RunProjectionOptions<State> {
  readonly projection: Projection<State>;
  readonly source: ProjectionSource;
  /**
   * Fold only events strictly after this global position, starting from `initialState()`. Default 0. Conflicts
   * with an existing checkpoint unless `rebuild` is set (resuming would silently ignore it).
   */
  readonly from?: number;
  /** Where to keep the checkpoint; without it, nothing is written and every run starts over. */
  readonly checkpointFile?: string;
  /** Write the checkpoint after this many events (and always at the end). Default 1000. */
  readonly checkpointEvery?: number;
  /** Ignore an existing checkpoint and start from `from` (default 0). Built-in projections always rebuild. */
  readonly rebuild?: boolean;
  /** The run's `--param key=value`: each must be one the projection declares; its defaults fill the rest. */
  readonly params?: Readonly<Record<string, string>>;
  /**
   * Called after each event and once at the end: `done` is how far (in global positions) the run has come since
   * it started, `total` the distance to the source's head when the source knows it.
   */
  readonly onProgress?: (done: number, total?: number) => void;
}

export interface ProjectionRunResult<State> {
  readonly state: State;
  readonly rows: ProjectionRow[];
  /** Global position of the last event folded (the start position when there was none). */
  readonly position: number;
  /** Events folded, including those folded before a resumed checkpoint. */
  readonly events: number;
  /** The checkpoint position this run resumed after, if it resumed. */
  readonly resumedFrom: number | undefined;
}

/** Parameters a projection does not take, or a required one missing. */
export class ProjectionParamError extends Error {
  readonly kind = 'projection_param_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'ProjectionParamError';
  }
}

/** A state that cannot be checkpointed: not plain JSON, with where and what. */
export class ProjectionStateError extends Error {
  readonly kind = 'projection_state_invalid' as const;
  constructor(projection: string, position: number, problem: string) {
    super(`projection ${projection}: its state after global position ${position} cannot be checkpointed: ${problem}`);
    this.name = 'ProjectionStateError';
  }
}

/** The run's parameters: those given, checked against the projection's, with its defaults. */
export function projectionParams(projection: Projection<unknown>, given: Readonly<Record<string, string>> = {}): ProjectionParams {
  const declared = projection.params ?? {};
  const known = Object.keys(declared);
  const unknown = Object.keys(given).filter((key) => !Object.hasOwn(declared, key));
  if (unknown.length > 0) {
    throw new ProjectionParamError(
      `projection ${projection.name} takes no parameter ${unknown.map((key) => `'${key}'`).join(', ')}${known.length === 0 ? ' (it takes none)' : `; it takes: ${known.map((key) => `${key} (${declared[key]!.description})`).join(', ')}`}`,
    );
  }
  const params: Record<string, string> = {};
  const missing: string[] = [];
  for (const [key, param] of Object.entries(declared)) {
    const value = given[key] ?? param.default;
    if (value === undefined) missing.push(key);
    else params[key] = value;
  }
  if (missing.length > 0) throw new ProjectionParamError(`projection ${projection.name} needs ${missing.map((key) => `--param ${key}=… (${declared[key]!.description})`).join(', ')}`);
  return params;
}

/** A checkpoint that cannot be used; names the file and the reason. */
export class ProjectionCheckpointError extends Error {
  readonly kind = 'projection_checkpoint_invalid' as const;
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`checkpoint ${file}: ${reason}`);
    this.name = 'ProjectionCheckpointError';
  }
}

export async function runProjection<State>(options: RunProjectionOptions<State>): Promise<ProjectionRunResult<State>> {
  const { projection, source, checkpointFile, onProgress } = options;
  const checkpointEvery = options.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY;
  if (!Number.isSafeInteger(checkpointEvery) || checkpointEvery < 1) {
    throw new RangeError(`checkpointEvery must be a whole number of at least 1, got ${checkpointEvery}`);
  }
  if (options.from !== undefined && (!Number.isSafeInteger(options.from) || options.from < 0)) {
    throw new RangeError(`from must be a global position (a whole number of at least 0), got ${options.from}`);
  }

  const params = projectionParams(projection as Projection<unknown>, options.params);
  const checkpoint =
    checkpointFile !== undefined && options.rebuild !== true
      ? await readCheckpoint<State>(checkpointFile, projection.name)
      : undefined;
  if (checkpoint !== undefined && JSON.stringify(checkpoint.params ?? {}) !== JSON.stringify(sorted(params))) {
    throw new ProjectionCheckpointError(
      checkpointFile!,
      `its state was folded with ${describeParams(checkpoint.params ?? {})}, not ${describeParams(params)}; rebuild to fold with these, or give the same`,
    );
  }
  if (checkpoint !== undefined && options.from !== undefined && options.from !== checkpoint.position) {
    throw new ProjectionCheckpointError(
      checkpointFile!,
      `it resumes after position ${checkpoint.position}, but from ${options.from} was asked; rebuild to start from ${options.from}, or drop from to resume`,
    );
  }

  const start = checkpoint?.position ?? options.from ?? 0;
  let state = checkpoint?.state ?? projection.initialState(params);
  let position = start;
  let events = checkpoint?.events ?? 0;
  let sinceCheckpoint = 0;
  const head = onProgress === undefined ? undefined : await source.head();
  const total = head === undefined ? undefined : Math.max(0, head - start);

  const save = async (): Promise<void> => {
    if (checkpointFile === undefined) return;
    const problem = jsonProblem(state);
    if (problem !== undefined) throw new ProjectionStateError(projection.name, position, problem);
    const saved: ProjectionCheckpoint<State> = { format: CHECKPOINT_FORMAT, projection: projection.name, position, events, ...(Object.keys(params).length === 0 ? {} : { params: sorted(params) }), state };
    await writeAtomically(checkpointFile, JSON.stringify(saved));
    sinceCheckpoint = 0;
  };

  const filter = projection.filter;
  for await (const event of source.events({ after: start, ...(filter === undefined ? {} : { filter }) })) {
    // A user-supplied source may ignore the filter; the runner's guarantee does not depend on it.
    if (!matchesFilter(filter, event)) continue;
    state = projection.evolve(state, event as RecordedEvent, params);
    position = event.position;
    events += 1;
    sinceCheckpoint += 1;
    onProgress?.(position - start, total);
    if (sinceCheckpoint >= checkpointEvery) await save();
  }
  await save();
  onProgress?.(total ?? position - start, total);
  return { state, rows: projection.rows(state, params), position, events, resumedFrom: checkpoint?.position };
}

function sorted(params: ProjectionParams): ProjectionParams {
  return Object.fromEntries(Object.entries(params).sort(([a], [b]) => a.localeCompare(b)));
}

function describeParams(params: ProjectionParams): string {
  const entries = Object.entries(params);
  return entries.length === 0 ? 'no parameters' : entries.map(([key, value]) => `${key}=${value}`).join(' ');
}

export async function readCheckpoint<State>(file: string, projectionName: string): Promise<ProjectionCheckpoint<State> | undefined> {
  if (!existsSync(file)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    throw new ProjectionCheckpointError(file, 'not JSON; delete it or rebuild');
  }
  const value = parsed as Partial<ProjectionCheckpoint<State>> | null;
  if (value === null || typeof value !== 'object' || value.format !== CHECKPOINT_FORMAT) {
    throw new ProjectionCheckpointError(file, `not a ${CHECKPOINT_FORMAT} file`);
  }
  if (value.projection !== projectionName) {
    throw new ProjectionCheckpointError(
      file,
      `it belongs to projection ${JSON.stringify(value.projection)}, not ${JSON.stringify(projectionName)}`,
    );
  }
  if (!Number.isSafeInteger(value.position) || !Number.isSafeInteger(value.events) || !('state' in value)) {
    throw new ProjectionCheckpointError(file, 'position, events and state are required');
  }
  return value as ProjectionCheckpoint<State>;
}

/** A crash mid-write leaves the previous checkpoint, never half of one. */
async function writeAtomically(file: string, content: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, content, 'utf8');
  await rename(temporary, file);
}
