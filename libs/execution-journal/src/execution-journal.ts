import { activeTraceparent } from './trace-context';
import {
  decide,
  evolve,
  initialState,
  executionStream,
  type ExecutionCommand,
  type ExecutionEvent,
  type ExecutionId,
  type ExecutionState,
  type ProtocolCorrelation,
} from '@oncegate/domain';
import { backoffMs, newEventId, WrongExpectedRevisionError, type EventStore, type EventToAppend, type RecordedEvent } from '@oncegate/event-store';
import { LRUCache } from 'lru-cache';
import { isoNow, type Clock } from './clock';
import { KeyedTurns } from './keyed-turns';

/** An execution as read from its stream: the folded state and the revision to append after. */
export interface LoadedExecution {
  readonly executionId: ExecutionId;
  readonly state: ExecutionState;
  /** Last revision of the stream, `undefined` when it does not exist. */
  readonly revision: number | undefined;
  readonly events: readonly RecordedEvent[];
}

/** Who appends, and in answer to what: becomes each event's metadata (docs/design.md section 4). */
export interface AppendContext {
  /** The authenticated principal (`agent:<name>`) or the service (`service:dispatcher-http`). */
  readonly actor: string;
  readonly correlation?: ProtocolCorrelation;
  /** The event or request that caused these events. */
  readonly causationId?: string | null;
}

export function toDomainEvent(recorded: RecordedEvent): ExecutionEvent {
  return {
    type: recorded.type,
    schemaVersion: recorded.metadata['schemaVersion'],
    data: recorded.data,
  } as ExecutionEvent;
}

/**
 * Streams are append-only, so a folded prefix stays true forever: each store keeps the executions it loaded
 * recently and reads only what was appended since (by anyone, in any process). An execution is read again mostly
 * while it is under way, so the most recent 256 are kept (the calls in flight and those just answered; one with its
 * events is about 4 KiB of heap); an older one is read again. A fold kept longer outlives V8's young generation and
 * costs the old generation's collector a mark at every full collection until it is dropped (docs/runtime.md,
 * "Memory").
 */
const CACHE_LIMIT = 256;
const folded = new WeakMap<EventStore, LRUCache<ExecutionId, LoadedExecution>>();

function foldsOf(store: EventStore): LRUCache<ExecutionId, LoadedExecution> {
  let cache = folded.get(store);
  if (cache === undefined) folded.set(store, (cache = new LRUCache({ max: CACHE_LIMIT })));
  return cache;
}

export async function loadExecution(store: EventStore, executionId: ExecutionId): Promise<LoadedExecution> {
  const cache = foldsOf(store);
  const cached = cache.get(executionId);
  const fresh = await store.readStream(
    executionStream(executionId),
    cached?.revision === undefined ? {} : { fromRevision: cached.revision + 1 },
  );
  if (cached !== undefined && fresh.length === 0) return cached;
  let state = cached?.state ?? initialState();
  for (const event of fresh) state = evolve(state, toDomainEvent(event));
  const events = cached === undefined ? fresh : [...cached.events, ...fresh];
  const execution: LoadedExecution = { executionId, state, revision: events.at(-1)?.revision, events };
  remember(cache, execution);
  return execution;
}

/** Keeps `execution` as the latest fold unless a longer one got there first (a load and a commit can cross). */
function remember(cache: LRUCache<ExecutionId, LoadedExecution>, execution: LoadedExecution): void {
  if (execution.revision === undefined) return;
  const current = cache.peek(execution.executionId);
  if (current?.revision !== undefined && current.revision > execution.revision) return;
  cache.set(execution.executionId, execution);
}

/** Keeps a fold this process decided and appended (its events as stored) as the execution's latest. */
export function rememberAppended(store: EventStore, execution: LoadedExecution): void {
  remember(foldsOf(store), execution);
}

/** This process's latest fold of the execution on `store`, without reading; `undefined` when none is cached. */
function cachedExecution(store: EventStore, executionId: ExecutionId): LoadedExecution | undefined {
  return folded.get(store)?.get(executionId);
}

/**
 * The execution as far as `event` at least: the cached fold when it already holds the event (a handler's
 * `stepTakenAlready` folded it), else read. A fold that is behind the stream only makes the next append conflict.
 */
export async function executionAsOf(store: EventStore, executionId: ExecutionId, event: RecordedEvent): Promise<LoadedExecution> {
  return cachedHolding(store, executionId, event) ?? loadExecution(store, executionId);
}

/** An event of an execution's stream, by where it stands in it. */
export type StreamEventAt = Pick<RecordedEvent, 'streamId' | 'revision'>;

/** The cached fold when it holds `event` (an event of the execution's stream), else `undefined`. */
export function cachedHolding(store: EventStore, executionId: ExecutionId, event: StreamEventAt): LoadedExecution | undefined {
  const cached = cachedExecution(store, executionId);
  return cached?.revision !== undefined && event.streamId === executionStream(executionId) && cached.revision >= event.revision ? cached : undefined;
}

/**
 * Folds a recorded event of an execution stream (as a subscription delivers it) into the store's cached execution,
 * without reading. Returns the cached execution when it already holds the event or now ends with it — the first
 * event of a stream starts a fold of its own; `undefined` when the event does not follow the cached revision (or
 * nothing is cached and it is not the first): the stream must be read then.
 */
export function foldRecorded(store: EventStore, executionId: ExecutionId, event: RecordedEvent): LoadedExecution | undefined {
  const cache = foldsOf(store);
  const cached = cache.get(executionId);
  if (cached?.revision !== undefined && event.revision <= cached.revision) return cached;
  const from: { state: ExecutionState; revision: number; events: readonly RecordedEvent[] } | undefined =
    cached?.revision !== undefined
      ? { state: cached.state, revision: cached.revision, events: cached.events }
      : event.revision === 0
        ? { state: initialState(), revision: -1, events: [] }
        : undefined;
  if (from === undefined || event.revision !== from.revision + 1) return undefined;
  const execution: LoadedExecution = {
    executionId,
    state: evolve(from.state, toDomainEvent(event)),
    revision: event.revision,
    events: [...from.events, event],
  };
  remember(cache, execution);
  return execution;
}

/**
 * Whether a subscription's handler may skip `event` without reading: the cached fold already holds it (this
 * process folded it, or took the step it asks for) and its state is not one `takes` accepts. Statuses only move
 * forward, and a later event that makes the step due again is delivered on its own, so the step is taken already.
 */
export function stepTakenAlready(
  store: EventStore,
  executionId: ExecutionId,
  event: RecordedEvent,
  takes: (state: ExecutionState) => boolean,
): boolean {
  const cached = foldRecorded(store, executionId, event);
  return cached !== undefined && !takes(cached.state);
}

export function eventsToAppend(
  executionId: ExecutionId,
  events: readonly ExecutionEvent[],
  context: AppendContext,
  clock: Clock,
): EventToAppend[] {
  const recordedAt = isoNow(clock);
  // The trace of the call or the step that appends: the next service's span is its child, in whatever process.
  const traceparent = activeTraceparent();
  return events.map((event) => {
    const eventId = newEventId();
    return {
      id: eventId,
      type: event.type,
      data: event.data,
      metadata: {
        eventId,
        executionId,
        causationId: context.causationId ?? null,
        correlation: context.correlation ?? {},
        actor: context.actor,
        recordedAt,
        schemaVersion: event.schemaVersion,
        ...(traceparent === undefined ? {} : { traceparent }),
      },
    };
  });
}

export interface CommandOutcome {
  /** The state after the appended events, or the state that made the command unnecessary. */
  readonly state: ExecutionState;
  /** Last revision of the stream after the append. */
  readonly revision: number | undefined;
  readonly appended: readonly ExecutionEvent[];
}

export interface CommandOptions {
  /**
   * How many expected-revision conflicts (appends by another process in between) the loop absorbs before it
   * gives up with the conflict. Default: no limit — some writer wins every commit, so the loop ends, and a
   * conflict never reaches an agent as an error.
   */
  readonly maxConflicts?: number;
  /**
   * Decide first on this process's cached fold, without reading the stream, when that fold holds this event (the
   * one a handler was given and has just folded): a fold that is behind the stream makes the append conflict, and
   * the loop then reads and decides again. A fold that does not hold the event is not used — it could decide that
   * there is nothing to do, which no conflict would ever correct.
   */
  readonly fromCacheAsOf?: StreamEventAt;
  /**
   * Nothing waits for the append promptly: the store may commit it with the next append (`AppendOptions.deferrable`),
   * until another command of this process on the execution comes to wait behind it.
   */
  readonly deferrable?: boolean;
}

/** Commands of one process on one execution take turns; see `KeyedTurns`. */
const turns = new WeakMap<EventStore, KeyedTurns<ExecutionId>>();

/** The longest pause between two tries after a conflict. */
const MAX_CONFLICT_BACKOFF_MS = 250;

/**
 * The whole command loop: load the stream, fold, let `build` choose a command from the state (or nothing),
 * decide, append with the expected revision. Commands of this process on one execution run one at a time, in
 * order, so they never conflict with each other; an append by another process makes the append fail, and the
 * loop then starts again from the new state (after a growing, jittered pause), so `build` always decides on
 * what is really there.
 */
export function runExecutionCommand(
  store: EventStore,
  executionId: ExecutionId,
  build: (state: ExecutionState, execution: LoadedExecution) => ExecutionCommand | undefined,
  context: AppendContext,
  clock: Clock,
  options: CommandOptions = {},
): Promise<CommandOutcome> {
  return runExecutionCommands(
    store,
    executionId,
    (state, execution) => {
      const command = build(state, execution);
      return command === undefined ? [] : [{ command, context }];
    },
    clock,
    options,
  );
}

/** A command of a turn, and who appends its events in answer to what. */
export interface PlannedCommand {
  readonly command: ExecutionCommand;
  readonly context: AppendContext;
}

/**
 * The command loop for several commands in one turn: each is decided on the state the ones before it left, and all
 * their events are appended together (one append, one commit), each event with its own command's context. A command
 * refused refuses the turn: nothing of it is appended.
 */
export function runExecutionCommands(
  store: EventStore,
  executionId: ExecutionId,
  build: (state: ExecutionState, execution: LoadedExecution) => readonly PlannedCommand[],
  clock: Clock,
  options: CommandOptions = {},
): Promise<CommandOutcome> {
  let streams = turns.get(store);
  if (streams === undefined) turns.set(store, (streams = new KeyedTurns()));
  return streams.run(executionId, (behind) => decideAndAppend(store, executionId, build, clock, options, behind));
}

async function decideAndAppend(
  store: EventStore,
  executionId: ExecutionId,
  build: (state: ExecutionState, execution: LoadedExecution) => readonly PlannedCommand[],
  clock: Clock,
  { maxConflicts = Infinity, fromCacheAsOf, deferrable = false }: CommandOptions,
  behind: AbortSignal,
): Promise<CommandOutcome> {
  for (let conflicts = 0; ; conflicts += 1) {
    const cached = fromCacheAsOf !== undefined && conflicts === 0 ? cachedHolding(store, executionId, fromCacheAsOf) : undefined;
    const execution = cached ?? (await loadExecution(store, executionId));
    const unchanged = { state: execution.state, revision: execution.revision, appended: [] };
    let state = execution.state;
    const events: ExecutionEvent[] = [];
    const toAppend: EventToAppend[] = [];
    for (const { command, context } of build(execution.state, execution)) {
      const decided = decide(command, state);
      for (const event of decided) state = evolve(state, event);
      events.push(...decided);
      toAppend.push(...eventsToAppend(executionId, decided, context, clock));
    }
    if (events.length === 0) return unchanged;
    try {
      const result = await store.appendToStream(
        executionStream(executionId),
        toAppend,
        // An append that may wait is held only while no other command of this process waits its turn on the
        // execution behind it (each would otherwise wait out the store's hold, one after the other), and not after
        // a conflict (another process is writing to the stream now).
        { expectedRevision: execution.revision ?? 'no_stream', deferrable: deferrable && conflicts === 0 && behind },
      );
      // What this process wrote extends its fold (the events as stored): its next command on the execution decides
      // on it without reading back what it wrote.
      remember(foldsOf(store), { executionId, state, revision: result.nextExpectedRevision, events: [...execution.events, ...result.events] });
      return { state, revision: result.nextExpectedRevision, appended: events };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError) || conflicts >= maxConflicts) throw error;
      // Writers in other processes win one per commit; a growing, jittered pause spreads the tries over commits
      // instead of having them collide again.
      if (conflicts >= 1) await new Promise((resolve) => setTimeout(resolve, Math.random() * backoffMs(conflicts, 1, MAX_CONFLICT_BACKOFF_MS)));
    }
  }
}
