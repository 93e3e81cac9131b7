/**
 * Test fixtures for the execution decider: commands with sensible defaults and `given`, which builds a state by
 * deciding commands in order — so every fixture state is a history the decider itself accepts.
 */
import type {
  AcceptExecution,
  AnswerSettlement,
  AttachRetry,
  AuthorizeExecution,
  CancelExecution,
  DenyApproval,
  DenyExecution,
  ExecutionCommand,
  ExpireExecution,
  GrantApproval,
  ObserveOutcome,
  RecordAnswer,
  RecordAttemptProgress,
  RecordAttemptTask,
  RecordTaskCheck,
  RecordDispatch,
  RecordMarkerProbe,
  RecordResultDelivered,
  RecordResultDeliveryFailed,
  RecordStatusQuery,
  RecordUnknownOutcome,
  RequestApproval,
  RequestCancellation,
  RequireReview,
  ResolveReview,
} from '../commands';
import { addMs, MINUTE_MS, SECOND_MS, type IsoInstant } from '../durations';
import type { AnswerTold, ExecutionEvent } from '../events';
import { decide, evolve } from '../execution';
import { initialState, type ExecutionState } from '../execution-state';
import type { Fingerprint } from '../fingerprint-value';
import type { OperationClass } from '../operation-class';
import { executionIdFromUlid, type ExecutionId } from '../streams';

export const EXECUTION_ID: ExecutionId = executionIdFromUlid('01J3Z6Y8QK4W5X2V7N9M0P1R2S');
export const OTHER_EXECUTION_ID: ExecutionId = executionIdFromUlid('01J3Z6Y8QK4W5X2V7N9M0P1R2T');
export const FINGERPRINT: Fingerprint = `hmac-sha256:k1:${'ab'.repeat(32)}`;
export const FINGERPRINT_UNDER_K2: Fingerprint = `hmac-sha256:k2:${'cd'.repeat(32)}`;
export const OTHER_FINGERPRINT: Fingerprint = `hmac-sha256:k1:${'ef'.repeat(32)}`;

/** Acceptance instant of every fixture execution. */
export const T0: IsoInstant = '2026-07-22T10:00:00.000Z';
export const WINDOW_MS = 5 * MINUTE_MS;
export const GRACE_MS = 60 * SECOND_MS;
export const ATTEMPT_TIMEOUT_MS = 30 * SECOND_MS;
export const MAX_ATTEMPTS = 3;

/** `ms` after acceptance. */
export function at(ms: number): IsoInstant {
  return addMs(T0, ms);
}

const id = EXECUTION_ID;

export function acceptExecution(overrides: Partial<AcceptExecution> = {}): AcceptExecution {
  return {
    type: 'AcceptExecution',
    executionId: id,
    now: T0,
    record: {
      actor: 'agent:deploy-bot',
      tool: 'deploy_release',
      channel: 'http',
      target: 'deploy-api.internal.example/releases',
      credential_ref: 'deploy-service',
      method: 'POST',
      arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22' },
      intent_scope: 'run:5f8097',
    },
    fingerprint: FINGERPRINT,
    operationClass: 'idempotent_write',
    intentScope: { kind: 'run', runId: '5f8097' },
    correlationWindowMs: WINDOW_MS,
    redeliveryGraceMs: GRACE_MS,
    attemptPolicy: { maxAttempts: MAX_ATTEMPTS, attemptTimeoutMs: ATTEMPT_TIMEOUT_MS, markerBeforeWork: true },
    correlation: { jsonRpcId: 1, sessionId: 'session-a', transport: 'streamable-http' },
    argumentsRef: 'sealed_arguments_1',
    ...overrides,
  };
}

export const attachRetry = (now: IsoInstant = at(1_000)): AttachRetry => ({
  type: 'AttachRetry',
  executionId: id,
  now,
  correlation: { jsonRpcId: 7, sessionId: 'session-b' },
});
export const requestApproval = (overrides: Partial<RequestApproval> = {}): RequestApproval => ({
  type: 'RequestApproval',
  executionId: id,
  now: at(100),
  requestedBy: 'policy:deploys-need-approval',
  reason: 'production deploy',
  ...overrides,
});
export const grantApproval = (now: IsoInstant = at(200)): GrantApproval => ({
  type: 'GrantApproval',
  executionId: id,
  now,
  by: 'user:alice',
  reason: 'release window open',
});
export const denyApproval = (now: IsoInstant = at(200)): DenyApproval => ({
  type: 'DenyApproval',
  executionId: id,
  now,
  by: 'user:alice',
  reason: 'freeze',
});
export const authorize = (
  basis: AuthorizeExecution['basis'] = 'policy',
  now: IsoInstant = at(300),
): AuthorizeExecution => ({ type: 'AuthorizeExecution', executionId: id, now, basis });
export const denyExecution = (basis: DenyExecution['basis'] = 'policy', now: IsoInstant = at(300)): DenyExecution => ({
  type: 'DenyExecution',
  executionId: id,
  now,
  basis,
  reason: 'not allowed',
});
export const dispatch = (now: IsoInstant = at(400), dispatcherId = 'dispatcher-http-1'): RecordDispatch => ({
  type: 'RecordDispatch',
  executionId: id,
  now,
  dispatcherId,
});
export const observe = (overrides: Partial<ObserveOutcome> = {}): ObserveOutcome => ({
  type: 'ObserveOutcome',
  executionId: id,
  now: at(500),
  attempt: 1,
  outcome: 'succeeded',
  source: 'response',
  targetStatus: 201,
  exitCode: null,
  resultRef: 'result:01J3Z6Y8QK4W5X2V7N9M0P1R2S:1',
  resultDigest: `sha256:${'0f'.repeat(32)}`,
  ...overrides,
});
export const unknownOutcome = (
  attempt = 1,
  now: IsoInstant = at(500),
  reason: RecordUnknownOutcome['reason'] = 'timeout_after_send',
): RecordUnknownOutcome => ({
  type: 'RecordUnknownOutcome',
  executionId: id,
  now,
  attempt,
  reason,
});
export const progressed = (
  progress: number,
  overrides: Partial<Omit<RecordAttemptProgress, 'type' | 'progress'>> = {},
): RecordAttemptProgress => ({ type: 'RecordAttemptProgress', executionId: id, now: at(450), attempt: 1, total: null, message: null, progress, ...overrides });
/** The reference an upstream MCP server's task gives (the shape ext-tasks serialises). */
export const TASK_REFERENCE = { endpointId: 'oncegate-mcp:v1:sha256:ab', generation: 'v1', taskId: 'task-7', originalOperation: 'tools/call' } as const;
export const taskStarted = (overrides: Partial<Omit<RecordAttemptTask, 'type'>> = {}): RecordAttemptTask => ({
  type: 'RecordAttemptTask',
  executionId: id,
  now: at(440),
  attempt: 1,
  task: TASK_REFERENCE,
  ...overrides,
});
export const taskCheck = (finding: RecordTaskCheck['finding'], attempt = 1): RecordTaskCheck => ({
  type: 'RecordTaskCheck',
  executionId: id,
  now: at(600),
  attempt,
  finding,
  reason: `upstream ledger: task task-7 ${finding}`,
});
export const statusQuery = (preconditionHolds: boolean, attempt = 1): RecordStatusQuery => ({
  type: 'RecordStatusQuery',
  executionId: id,
  now: at(600),
  attempt,
  preconditionHolds,
  observedStatus: preconditionHolds ? 'version=41' : 'version=42',
});
export const markerProbe = (
  marker: RecordMarkerProbe['marker'],
  exitStatus: number | null = null,
  attempt = 1,
): RecordMarkerProbe => ({ type: 'RecordMarkerProbe', executionId: id, now: at(600), attempt, marker, exitStatus });
export const requireReview = (reason: RequireReview['reason'] = 'irreversible_outcome_unknown'): RequireReview => ({
  type: 'RequireReview',
  executionId: id,
  now: at(700),
  reason,
});
export const resolveReview = (resolution: ResolveReview['resolution'], overrides: Partial<ResolveReview> = {}): ResolveReview => ({
  type: 'ResolveReview',
  executionId: id,
  now: at(800),
  resolution,
  by: 'user:operator',
  reason: 'checked the target',
  ...overrides,
});
export const delivered = (now: IsoInstant = at(900), replayed = false): RecordResultDelivered => ({
  type: 'RecordResultDelivered',
  executionId: id,
  now,
  correlation: { jsonRpcId: 1, transport: 'streamable-http' },
  replayed,
  evidence: 'a later request on the same MCP session after the response was written',
});
export const deliveryFailed = (now: IsoInstant = at(900)): RecordResultDeliveryFailed => ({
  type: 'RecordResultDeliveryFailed',
  executionId: id,
  now,
  correlation: { jsonRpcId: 1, transport: 'streamable-http' },
  reason: 'response stream closed before write',
});
/** An answer to a call, recorded once its delivery settled: by default "still in progress", unproven. */
export const answered = (
  told: Partial<AnswerTold> = {},
  delivery: AnswerSettlement = { kind: 'unproven', reason: 'the MCP session was closed before anything proved receipt' },
  now: IsoInstant = at(950),
): RecordAnswer => ({
  type: 'RecordAnswer',
  executionId: id,
  now,
  correlation: { jsonRpcId: 1, sessionId: 'session-1', transport: 'streamable-http' },
  told: { state: 'dispatched', isError: false, attempts: 1, attached: false, replayed: false, givenAt: at(940), ...told },
  delivery,
});
export const cancel = (now: IsoInstant = at(350)): CancelExecution => ({
  type: 'CancelExecution',
  executionId: id,
  now,
  trigger: 'client_notification',
  correlation: { jsonRpcId: 1 },
});
export const requestCancellation = (now: IsoInstant = at(450)): RequestCancellation => ({
  type: 'RequestCancellation',
  executionId: id,
  now,
  trigger: 'client_notification',
  correlation: { jsonRpcId: 1 },
});
export const expire = (now: IsoInstant = at(WINDOW_MS)): ExpireExecution => ({
  type: 'ExpireExecution',
  executionId: id,
  now,
});

/** The events a history of commands produces, each decided on the state the ones before it left. */
export function historyOf(...commands: ExecutionCommand[]): ExecutionEvent[] {
  const events: ExecutionEvent[] = [];
  let state = initialState();
  for (const command of commands) {
    for (const event of decide(command, state)) {
      events.push(event);
      state = evolve(state, event);
    }
  }
  return events;
}

export function given(...commands: ExecutionCommand[]): ExecutionState {
  return historyOf(...commands).reduce(evolve, initialState());
}

/** Decide, then fold the new events onto the state. */
export function when(state: ExecutionState, command: ExecutionCommand) {
  const events = decide(command, state);
  return { events, state: events.reduce(evolve, state) };
}

export const accepted = (overrides: Partial<AcceptExecution> = {}) => [acceptExecution(overrides)];
export const authorized = (overrides: Partial<AcceptExecution> = {}) => [...accepted(overrides), authorize()];
export const dispatched = (overrides: Partial<AcceptExecution> = {}) => [...authorized(overrides), dispatch()];
export const unknown = (operationClass: OperationClass, overrides: Partial<AcceptExecution> = {}) => [
  ...dispatched({ operationClass, ...overrides }),
  unknownOutcome(),
];
export const completed = (overrides: Partial<AcceptExecution> = {}) => [...dispatched(overrides), observe()];

/** Runs `fn` and returns what it threw, failing the test when it throws nothing. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw');
}
