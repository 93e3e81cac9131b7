import { runStream, type ExecutionStatus } from '@oncegate/domain';
import { newEventId, WrongExpectedRevisionError, type EventStore, type ExpectedRevision, type RecordedEvent } from '@oncegate/event-store';
import { isoNow, loadExecution, type Clock } from '@oncegate/execution-journal';
import { eventsFromStore } from '@oncegate/projections';
import { LRUCache } from 'lru-cache';

/**
 * The sessions journal (docs/design.md section 3): one `run-<id>` stream per agent run with RunStarted, RunGranted and
 * RunEnded. A run is the unit of a session grant. A client declares its run, or gets one per MCP session
 * (`session:<session id>`); a run belongs to the actor that started it.
 */
export interface RunStartedData {
  readonly runId: string;
  readonly actor: string;
  readonly source: 'declared' | 'session';
  readonly startedAt: string;
}

export interface RunGrantedData {
  readonly runId: string;
  /** Tool names, or `*`. */
  readonly tools: readonly string[];
  readonly by: string;
  readonly reason: string;
  /** The execution whose approval request was granted. */
  readonly executionId: string;
  readonly grantedAt: string;
}

export interface RunEndedData {
  readonly runId: string;
  readonly by: string;
  readonly reason: string;
  readonly endedAt: string;
}

export interface RunView {
  readonly runId: string;
  readonly actor: string;
  readonly source: 'declared' | 'session';
  readonly startedAt: string;
  readonly grants: readonly RunGrantedData[];
  readonly ended: RunEndedData | null;
  /** Revision of the run stream, for appends that must not race. */
  readonly revision: number;
}

/** What a client may declare as its run: 1 to 128 letters, digits and `.`, `_`, `-`, `:`. */
export const DECLARED_RUN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/**
 * The run a call belongs to: the one it declared, kept apart per actor (`agent:ci/deploy-7`: another agent
 * naming the same run has another run), else one per MCP session, else none.
 */
export function runOfCall(
  actor: string,
  declaredRun: string | undefined,
  sessionId: string | undefined,
): { runId: string; source: 'declared' | 'session' } | null {
  if (declaredRun !== undefined && declaredRun !== '') return { runId: `${actor}/${declaredRun}`, source: 'declared' };
  return sessionId ? { runId: sessionRunId(sessionId), source: 'session' } : null;
}

export function sessionRunId(sessionId: string): string {
  return `session:${sessionId}`;
}

export function foldRun(events: readonly RecordedEvent[]): RunView | undefined {
  let view: RunView | undefined;
  for (const event of events) {
    switch (event.type) {
      case 'RunStarted': {
        const data = event.data as RunStartedData;
        view = { runId: data.runId, actor: data.actor, source: data.source, startedAt: data.startedAt, grants: [], ended: null, revision: event.revision };
        break;
      }
      case 'RunGranted':
        if (view) view = { ...view, grants: [...view.grants, event.data as RunGrantedData], revision: event.revision };
        break;
      case 'RunEnded':
        if (view) view = { ...view, ended: event.data as RunEndedData, revision: event.revision };
        break;
      default:
        break;
    }
  }
  return view;
}

export async function readRun(store: EventStore, runId: string): Promise<RunView | undefined> {
  return foldRun(await store.readStream(runStream(runId)));
}

/** The event types of run streams. */
export const RUN_EVENT_TYPES = ['RunStarted', 'RunGranted', 'RunEnded'] as const;

/** Runs a {@link RunViews} keeps, at most (the most recently asked for). */
const RUN_VIEWS_LIMIT = 4_096;

/**
 * The runs one process asks about on every call (authorization, for each accepted execution), kept as last read
 * with the position they are known complete through. Where the store can tell which event types were committed
 * since a position (`notifiedSince`), it says whether any run event was committed since — PostgreSQL counting every
 * append answered before the newest commit this process knows of, so a run ended before the call's
 * `ExecutionAccepted` was committed always counts; SQLite everything in its file when asked — and the run is read
 * again only then. Elsewhere every ask reads, as `readRun`.
 */
export class RunViews {
  private readonly kept = new LRUCache<string, { view: RunView; through: number }>({ max: RUN_VIEWS_LIMIT });

  constructor(private readonly store: EventStore) {}

  /** The run as of every commit this process knows of; `undefined` when it was never started. */
  async current(runId: string): Promise<RunView | undefined> {
    const kept = this.kept.get(runId);
    if (kept !== undefined) {
      const told = await this.store.notifiedSince?.(kept.through, RUN_EVENT_TYPES);
      if (told?.changed === false) {
        kept.through = Math.max(kept.through, told.through);
        return kept.view;
      }
    }
    // Every position the store has seen is committed, so a read issued after this holds all of them.
    const through = this.store.seenPosition?.();
    const view = await readRun(this.store, runId);
    if (view !== undefined && through !== undefined) this.kept.set(runId, { view, through });
    return view;
  }
}

/** Tools the run holds a session grant for (none once it ended). */
export function grantedTools(run: RunView): string[] {
  return run.ended ? [] : [...new Set(run.grants.flatMap((grant) => grant.tools))];
}

async function appendRunEvent(
  store: EventStore,
  runId: string,
  type: 'RunStarted' | 'RunGranted' | 'RunEnded',
  data: object,
  actor: string,
  clock: Clock,
  expectedRevision: ExpectedRevision,
): Promise<boolean> {
  const eventId = newEventId();
  try {
    await store.appendToStream(
      runStream(runId),
      [{ id: eventId, type, data, metadata: { eventId, runId, actor, recordedAt: isoNow(clock), schemaVersion: 1 } }],
      { expectedRevision },
    );
    return true;
  } catch (error) {
    if (error instanceof WrongExpectedRevisionError) return false;
    throw error;
  }
}

/** Records the start of a run unless it is already recorded; returns the run as it stands. */
export async function startRun(
  store: EventStore,
  run: { runId: string; actor: string; source: 'declared' | 'session' },
  clock: Clock,
  views?: RunViews,
): Promise<RunView> {
  const known = await (views === undefined ? readRun(store, run.runId) : views.current(run.runId));
  if (known) return known;
  const data: RunStartedData = { ...run, startedAt: isoNow(clock) };
  await appendRunEvent(store, run.runId, 'RunStarted', data, run.actor, clock, 'no_stream');
  return (await readRun(store, run.runId))!;
}

export async function grantRun(store: EventStore, grant: Omit<RunGrantedData, 'grantedAt'>, clock: Clock): Promise<void> {
  const data: RunGrantedData = { ...grant, grantedAt: isoNow(clock) };
  await appendRunEvent(store, grant.runId, 'RunGranted', data, 'service:authorization', clock, 'stream_exists');
}

export class RunNotFoundError extends Error {
  readonly kind = 'run_not_found' as const;
  constructor(readonly runId: string) {
    super(`no run ${runId} is recorded`);
    this.name = 'RunNotFoundError';
  }
}

/** Ends a run: its grants stop applying. Ending an ended run changes nothing and returns `false`. */
export async function endRun(store: EventStore, runId: string, by: string, reason: string, clock: Clock): Promise<boolean> {
  for (;;) {
    const run = await readRun(store, runId);
    if (!run) throw new RunNotFoundError(runId);
    if (run.ended) return false;
    const data: RunEndedData = { runId, by, reason, endedAt: isoNow(clock) };
    if (await appendRunEvent(store, runId, 'RunEnded', data, by, clock, run.revision)) return true;
  }
}

/** Every recorded run, oldest first. */
export async function listRuns(store: EventStore): Promise<RunView[]> {
  const runs: RunView[] = [];
  for await (const event of eventsFromStore(store, { filter: { eventTypes: ['RunStarted'] } })) {
    const run = await readRun(store, (event.data as RunStartedData).runId);
    if (run) runs.push(run);
  }
  return runs;
}

export interface RunExecution {
  readonly executionId: string;
  readonly tool: string;
  readonly acceptedAt: string;
  readonly status: ExecutionStatus;
}

/** The executions accepted in a run, in order, with their current state. */
export async function executionsOfRun(store: EventStore, runId: string): Promise<RunExecution[]> {
  const executions: RunExecution[] = [];
  for await (const event of eventsFromStore(store, { filter: { eventTypes: ['ExecutionAccepted'] } })) {
    const data = event.data as { executionId: string; toolName: string; acceptedAt: string; runId?: string | null };
    if (data.runId !== runId) continue;
    const { state } = await loadExecution(store, data.executionId as never);
    executions.push({ executionId: data.executionId, tool: data.toolName, acceptedAt: data.acceptedAt, status: state.status });
  }
  return executions;
}
