/**
 * One row of the executions index per execution, taken from the state the domain's `evolve` folds: the index never
 * works a state out on its own, so a row always says what `oncegate investigate` and the agent's answer say.
 */
import {
  answeredWithError,
  epochMsOf,
  evolve,
  executionIdOfStream,
  initialState,
  isExecutionEventType,
  type ExecutionEvent,
  type ExecutionId,
  type ExecutionState,
  type ExecutionStatus,
  type OperationClass,
} from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';

/** What the index holds of one execution: the columns analysts filter and read. */
export interface ExecutionRow {
  readonly executionId: ExecutionId;
  readonly tool: string;
  /** The authenticated principal that called, e.g. `agent:deploy-bot`. */
  readonly actor: string;
  readonly operationClass: OperationClass;
  /** The domain's status (`EXECUTION_STATUSES`). */
  readonly state: ExecutionStatus;
  /** The agent run it belongs to; `null` when the client declared none and had no session. */
  readonly runId: string | null;
  /** `http`, `ssh`, `mcp` or a plugin channel. */
  readonly channel: string;
  /** The contract's logical target, e.g. `deploy-api.internal.example/releases`. */
  readonly target: string;
  /** The target's host (and port): what comes before the first `/` of `target`. */
  readonly targetHost: string;
  /** Dispatched attempts so far. */
  readonly attempts: number;
  /** Later calls that matched it and attached. */
  readonly retriesAttached: number;
  readonly acceptedAt: string;
  /** When the store took its latest event. */
  readonly lastChangeAt: string;
  /** The global position of its latest event. */
  readonly lastPosition: number;
  readonly firstDispatchedAt: string | null;
  /** The target's status (HTTP) of the definite outcome, when there is one. */
  readonly targetStatus: number | null;
  /** The exit status (SSH) of the definite outcome, when there is one. */
  readonly exitCode: number | null;
  /** The target's definite answer was an error (told with `isError`; the state stays `completed`). */
  readonly errorAnswer: boolean;
  /** Why it is (or was) held for review. */
  readonly reviewReason: string | null;
  /** Why it was denied. */
  readonly denialBasis: string | null;
  /** `pending`, `granted` or `denied` when an approval was asked for. */
  readonly approval: string | null;
  /** The intent fingerprint (`hmac-sha256:<key-id>:<hex>`), to find the other executions of an intent. */
  readonly fingerprint: string;
}

/** The execution's folded state and how far into the global order it has been folded. */
export interface FoldedExecution {
  readonly state: IndexedState;
  /** The global position of the last event folded into `state`. */
  readonly position: number;
  readonly lastChangeAt: string;
}

/** The domain event of an execution stream, or `undefined` for another stream or a type the domain does not know. */
export function executionEventOf(recorded: RecordedEvent): { executionId: ExecutionId; event: ExecutionEvent } | undefined {
  const executionId = executionIdOfStream(recorded.streamId);
  if (executionId === undefined || !isExecutionEventType(recorded.type)) return undefined;
  return { executionId, event: { type: recorded.type, schemaVersion: recorded.metadata['schemaVersion'], data: recorded.data } as ExecutionEvent };
}

/** `host[:port]` of a logical target (`user@host/path` gives `host`). */
export function targetHostOf(target: string): string {
  const slash = target.indexOf('/');
  const hostPart = slash < 0 ? target : target.slice(0, slash);
  const at = hostPart.lastIndexOf('@');
  return at < 0 ? hostPart : hostPart.slice(at + 1);
}

/** The row of a folded execution; `undefined` before its `ExecutionAccepted` (a stream the index cannot place). */
export function rowOf(executionId: ExecutionId, folded: FoldedExecution): ExecutionRow | undefined {
  const { state } = folded;
  const accepted = state.accepted;
  if (accepted === null) return undefined;
  return {
    executionId,
    tool: accepted.toolName,
    actor: accepted.actor,
    operationClass: accepted.operationClass,
    state: state.status,
    runId: accepted.runId,
    channel: accepted.channel,
    target: state.target,
    targetHost: targetHostOf(state.target),
    attempts: state.attempts,
    retriesAttached: state.retriesAttached,
    acceptedAt: accepted.acceptedAt,
    lastChangeAt: folded.lastChangeAt,
    lastPosition: folded.position,
    firstDispatchedAt: state.firstDispatchedAt,
    targetStatus: state.outcome?.targetStatus ?? null,
    exitCode: state.outcome?.exitCode ?? null,
    errorAnswer: answeredWithError(state.outcome),
    reviewReason: state.review?.reason ?? null,
    denialBasis: state.denial?.basis ?? null,
    approval: state.approval?.decision ?? null,
    fingerprint: accepted.fingerprint,
  };
}

/** The domain's state plus the one fact of the record the domain's state does not keep: where the effect lands. */
export type IndexedState = ExecutionState & { readonly target: string };

/** The index's starting point for an execution it has not seen. */
export function initialIndexedState(): IndexedState {
  return { ...initialState(), target: '' };
}

/** Folds one event with the domain's `evolve`, keeping the target from the acceptance. */
export function evolveIndexed(state: IndexedState, event: ExecutionEvent): IndexedState {
  const target = event.type === 'ExecutionAccepted' ? event.data.record.target : state.target;
  return { ...evolve(state, event), target };
}

/** The milliseconds since the epoch of an ISO-8601 instant the journal holds, for ordering and time filters. */
export function instantMs(instant: string): number {
  return epochMsOf(instant as Parameters<typeof epochMsOf>[0]);
}
