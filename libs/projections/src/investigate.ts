/**
 * "What happened to this call?" — pure over the recorded events of one execution (or of every execution of one
 * fingerprint, with its intent claims). It answers the six questions an incident review asks, each with a short
 * text and the global positions of the events that prove it, beside a timeline of everything recorded.
 */
import {
  evolve,
  initialState,
  isExecutionId,
  isFingerprint,
  matchRetry,
  progressWords,
  type ExecutionEvent,
  type ExecutionId,
  type AnswerDelivery,
  type AnswerTold,
  type ExecutionState,
  type ExecutionStatus,
  type Fingerprint,
  type IsoInstant,
  type NewExecutionReason,
  type ProtocolCorrelation,
  type RetryReturn,
} from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';
import { executionEventOf, INTENT_STREAM_PREFIX } from './execution-events';

export type InvestigationSubject = { readonly executionId: ExecutionId } | { readonly fingerprint: Fingerprint };

export class InvalidInvestigationSubjectError extends Error {
  readonly kind = 'investigation_subject_invalid' as const;
  constructor(readonly text: string) {
    super(`${JSON.stringify(text)} is neither an execution id (ex_<ULID>) nor a fingerprint (hmac-sha256:<key-id>:<hex>)`);
    this.name = 'InvalidInvestigationSubjectError';
  }
}

/** What the analyst typed: an execution id or a fingerprint. */
export function parseInvestigationSubject(text: string): InvestigationSubject {
  const trimmed = text.trim();
  if (isExecutionId(trimmed)) return { executionId: trimmed };
  if (isFingerprint(trimmed)) return { fingerprint: trimmed };
  throw new InvalidInvestigationSubjectError(text);
}

export interface TimelineEntry {
  /** When the store recorded the event. */
  readonly time: string;
  readonly position: number;
  readonly stream: string;
  readonly revision: number;
  readonly type: string;
  readonly executionId: string | null;
  readonly actor: string | null;
  /** e.g. `rpc=7 session=3f2a… transport=streamable-http`; empty when none was recorded. */
  readonly correlation: string;
  readonly detail: string;
}

export interface Answer<TFacts> {
  readonly question: string;
  readonly summary: string;
  /** Global positions of the events the answer rests on. */
  readonly evidence: number[];
  readonly facts: TFacts;
}

/** One attempt of an execution: which dispatcher instance ran it, from its `Dispatched` event. */
export interface AttemptOfExecution {
  readonly attempt: number;
  /** The dispatcher instance that sent it, e.g. `dispatcher-http@host/serve/4242-9f3a1c2e`. */
  readonly dispatcherId: string;
  readonly dispatchedAt: string;
  /** Global position of its `Dispatched` event. */
  readonly position: number;
}

export interface ExecutionSummary {
  readonly executionId: ExecutionId;
  readonly fingerprint: string;
  readonly actor: string;
  readonly tool: string;
  readonly scope: string;
  readonly acceptedAt: string;
  readonly acceptedPosition: number;
  readonly status: ExecutionStatus;
  /** Every attempt, in order; empty when it was never dispatched. */
  readonly attempts: AttemptOfExecution[];
}

export type ProcessVerdict = 'one' | 'several' | 'ambiguous' | 'unknown';

export interface ProcessFacts {
  readonly verdict: ProcessVerdict;
  /** Accepted plus RetryAttached: every call that reached the gateway for the subject. */
  readonly calls: number;
  readonly sessions: string[];
  readonly runs: string[];
  readonly transports: string[];
  readonly jsonRpcIds: Array<string | number>;
}

export interface FirstCallOfExecution {
  readonly executionId: ExecutionId;
  readonly acceptedAt: string;
  readonly approval: { readonly requestedAt: string; readonly decision: 'pending' | 'granted' | 'denied'; readonly by: string | null } | null;
  readonly authorized: { readonly basis: string; readonly at: string } | null;
  readonly denied: { readonly basis: string; readonly reason: string; readonly at: string } | null;
  readonly cancelledAt: string | null;
  readonly firstDispatch: {
    readonly attempt: number;
    readonly dispatcherId: string;
    readonly at: string;
    /** Why the attempt never left the gateway (its outcome has source `not_sent`); `null` when it was sent. */
    readonly notSent: string | null;
  } | null;
}

export interface FirstCallFacts {
  readonly executions: FirstCallOfExecution[];
}

/**
 * The words of the execution states (docs/gateway.md, what the agent is told): `completed`: the target gave a definite
 * answer, an error one included (`isError`); `not_sent`: the last attempt never left the gateway (the execution
 * `failed`: nothing reached the target); `unknown`: no answer came back.
 */
export type OutcomeKind = 'completed' | 'not_sent' | 'unknown' | 'awaiting' | 'not_dispatched';

export interface ObservedOutcome {
  readonly attempt: number;
  readonly kind: 'completed' | 'not_sent' | 'unknown';
  /** A completed attempt whose answer was an error (an HTTP 3xx-5xx, a non-zero exit status, a SQL error). */
  readonly isError: boolean;
  /** Where a definite outcome came from (`response`, `marker`, `not_sent`); `null` for an unknown one. */
  readonly source: string | null;
  readonly targetStatus: number | null;
  readonly exitCode: number | null;
  /** Why the outcome is unknown, or why nothing was sent. */
  readonly reason: string | null;
  readonly at: string;
  readonly position: number;
}

/** One marker probe of a remote command: what the host showed, or why it could not be asked. */
export interface MarkerProbeFact {
  readonly attempt: number;
  readonly marker: string;
  /** The attempt named in the marker file, when it says. */
  readonly markerAttempt: number | null;
  readonly failure: string | null;
  readonly at: string;
  readonly position: number;
}

export interface OutcomeOfExecution {
  readonly executionId: ExecutionId;
  /** The latest: what is known now. */
  readonly kind: OutcomeKind;
  readonly outcomes: ObservedOutcome[];
  readonly probes: MarkerProbeFact[];
  readonly review: { readonly reason: string; readonly resolution: string | null } | null;
}

export interface OutcomeFacts {
  readonly executions: OutcomeOfExecution[];
}

export interface DeliveryOfExecution {
  readonly executionId: ExecutionId;
  readonly failures: Array<{ readonly at: string; readonly reason: string; readonly afterOutcome: boolean; readonly position: number }>;
  readonly deliveries: Array<{ readonly at: string; readonly replayed: boolean; readonly sessionId: string | null; readonly position: number }>;
  readonly failedAfterCompletion: boolean;
  /** A ResultDelivered came after the first failed delivery. */
  readonly deliveredAfterFailure: boolean;
}

export interface DeliveryFacts {
  readonly executions: DeliveryOfExecution[];
}

export interface AttachedCall {
  readonly executionId: ExecutionId;
  readonly at: string;
  readonly returned: RetryReturn;
  readonly replayed: boolean;
  readonly jsonRpcId: string | number | null;
  readonly sessionId: string | null;
  readonly position: number;
}

export interface NewExecution {
  readonly executionId: ExecutionId;
  readonly priorExecutionId: ExecutionId;
  readonly acceptedAt: string;
  readonly reason: NewExecutionReason;
  /**
   * `new_intent_requested` is inferred: the journal does not record the flag, but the prior still matched at that
   * instant, so nothing else makes a new execution.
   */
  readonly inferred: boolean;
}

export interface SecondCallFacts {
  readonly attached: boolean;
  readonly attaches: AttachedCall[];
  /** An intent scope `key:` (caller's `_meta` key or the contract's durable key argument). */
  readonly idempotencyKey: boolean;
  readonly scopes: Array<{ readonly executionId: ExecutionId; readonly scope: string }>;
  /** A second Dispatched in one execution (recovery re-sent it with the same key). */
  readonly newAttempt: boolean;
  readonly dispatches: Array<{ readonly executionId: ExecutionId; readonly attempts: number }>;
  /** Another execution for the same fingerprint, accepted after the subject's first one. */
  readonly newExecution: boolean;
  readonly newExecutions: NewExecution[];
}

/** One answer the gateway gave a call: what it told, and what is known of its delivery. */
export interface AnswerOfCall {
  /** `AnswerGiven`, or `ResultDelivered` / `ResultDeliveryFailed` for a result whose delivery was proven or refused. */
  readonly event: 'AnswerGiven' | 'ResultDelivered' | 'ResultDeliveryFailed';
  /** What it told; `null` for a result delivery recorded before answers were (what it said is not recorded). */
  readonly told: AnswerTold | null;
  readonly delivery: AnswerDelivery;
  /** With `delivered`: what proved receipt. */
  readonly evidence: string | null;
  /** With `not_delivered`: why; with `unproven`: why nothing could show it. */
  readonly reason: string | null;
  /** When its delivery settled. */
  readonly at: string;
  readonly position: number;
}

/** One call of the execution (the first, accepted; or a retry, attached) and the answers it was given. */
export interface CallTold {
  readonly call: 'first' | 'retry';
  readonly correlation: ProtocolCorrelation;
  readonly at: string;
  /** Global position of its `ExecutionAccepted` or `RetryAttached`. */
  readonly position: number;
  /** Usually one; a call answered again (its stream resumed after a restart) has more; none while nothing settled. */
  readonly answers: AnswerOfCall[];
}

export interface ToldOfExecution {
  readonly executionId: ExecutionId;
  readonly calls: CallTold[];
  /** Answers that name none of its calls: a task's result handed out by a `tasks/get` (the correlation is that request's). */
  readonly otherAnswers: Array<AnswerOfCall & { readonly correlation: ProtocolCorrelation }>;
}

export interface ToldFacts {
  readonly executions: ToldOfExecution[];
}

export interface Investigation {
  readonly subject: InvestigationSubject;
  /** False when nothing was recorded for the subject. */
  readonly found: boolean;
  /** The executions investigated, in acceptance order. */
  readonly executions: ExecutionSummary[];
  readonly timeline: TimelineEntry[];
  readonly answers: {
    readonly processes: Answer<ProcessFacts>;
    readonly firstCall: Answer<FirstCallFacts>;
    readonly outcome: Answer<OutcomeFacts>;
    readonly delivery: Answer<DeliveryFacts>;
    readonly secondCall: Answer<SecondCallFacts>;
    readonly told: Answer<ToldFacts>;
  };
}

const QUESTIONS = {
  processes: 'One process or two?',
  firstCall: 'Was the first call authorized and dispatched?',
  outcome: "Did the target's outcome come back?",
  delivery: 'Did delivery fail after completion?',
  secondCall: 'Did the second call attach, carry an idempotency key, or create a new attempt?',
  told: 'Was the agent told, and what?',
} as const;

interface Step {
  readonly event: ExecutionEvent;
  readonly recorded: RecordedEvent;
}

interface ExecutionHistory {
  readonly executionId: ExecutionId;
  readonly steps: Step[];
  readonly accepted: Extract<ExecutionEvent, { type: 'ExecutionAccepted' }> | undefined;
  readonly acceptedPosition: number;
  readonly state: ExecutionState;
}

export function investigate(events: readonly RecordedEvent[], subject: InvestigationSubject): Investigation {
  const ordered = [...events].sort((a, b) => a.position - b.position);
  const histories = historiesOf(ordered);
  const fingerprint =
    'fingerprint' in subject ? subject.fingerprint : histories.get(subject.executionId)?.accepted?.data.fingerprint;
  const sameFingerprint = [...histories.values()]
    .filter((history) => history.accepted !== undefined && history.accepted.data.fingerprint === fingerprint)
    .sort((a, b) => a.acceptedPosition - b.acceptedPosition);
  const focus =
    'executionId' in subject
      ? [histories.get(subject.executionId)].filter((history): history is ExecutionHistory => history?.accepted !== undefined)
      : sameFingerprint;
  // For an execution subject, later executions of its fingerprint still answer "did the retry make a new one?".
  const lineage = 'executionId' in subject && focus.length > 0 ? sameFingerprint : focus;
  const related = new Set<string>(lineage.map((history) => history.executionId));
  for (const history of focus) related.add(history.executionId);

  const timeline = ordered
    .filter((event) => {
      const found = executionEventOf(event);
      if (found !== undefined) return related.has(found.executionId);
      return event.streamId.startsWith(INTENT_STREAM_PREFIX) && related.has(String(dataField(event, 'executionId')));
    })
    .map(timelineEntryOf);

  return {
    subject,
    found: focus.length > 0,
    executions: focus.map(summaryOf),
    timeline,
    answers: {
      processes: processesAnswer(focus),
      firstCall: firstCallAnswer(focus),
      outcome: outcomeAnswer(focus),
      delivery: deliveryAnswer(focus),
      secondCall: secondCallAnswer(focus, lineage, 'executionId' in subject ? subject.executionId : undefined),
      told: toldAnswer(focus),
    },
  };
}

function historiesOf(ordered: readonly RecordedEvent[]): Map<ExecutionId, ExecutionHistory> {
  const steps = new Map<ExecutionId, Step[]>();
  for (const recorded of ordered) {
    const found = executionEventOf(recorded);
    if (found === undefined) continue;
    const list = steps.get(found.executionId) ?? [];
    list.push({ event: found.event, recorded });
    steps.set(found.executionId, list);
  }
  const histories = new Map<ExecutionId, ExecutionHistory>();
  for (const [executionId, list] of steps) {
    const acceptedStep = list.find((step) => step.event.type === 'ExecutionAccepted');
    histories.set(executionId, {
      executionId,
      steps: list,
      accepted: acceptedStep?.event as ExecutionHistory['accepted'],
      acceptedPosition: acceptedStep?.recorded.position ?? Number.MAX_SAFE_INTEGER,
      state: list.reduce((state, step) => evolve(state, step.event), initialState()),
    });
  }
  return histories;
}

function summaryOf(history: ExecutionHistory): ExecutionSummary {
  const data = history.accepted!.data;
  return {
    executionId: history.executionId,
    fingerprint: data.fingerprint,
    actor: data.record.actor,
    tool: data.toolName,
    scope: data.record.intent_scope,
    acceptedAt: data.acceptedAt,
    acceptedPosition: history.acceptedPosition,
    status: history.state.status,
    attempts: stepsOf(history, 'Dispatched').map(({ event, recorded }) => ({
      attempt: event.data.attempt,
      dispatcherId: event.data.dispatcherId,
      dispatchedAt: event.data.dispatchedAt,
      position: recorded.position,
    })),
  };
}

function stepsOf<TType extends ExecutionEvent['type']>(
  history: ExecutionHistory,
  type: TType,
): Array<{ event: Extract<ExecutionEvent, { type: TType }>; recorded: RecordedEvent }> {
  return history.steps.filter((step) => step.event.type === type) as Array<{
    event: Extract<ExecutionEvent, { type: TType }>;
    recorded: RecordedEvent;
  }>;
}

// (1) One process or two.
function processesAnswer(focus: readonly ExecutionHistory[]): Answer<ProcessFacts> {
  const sessions: string[] = [];
  const runs: string[] = [];
  const transports: string[] = [];
  const jsonRpcIds: Array<string | number> = [];
  const evidence: number[] = [];
  const note = (correlation: ProtocolCorrelation, position: number): void => {
    evidence.push(position);
    if (correlation.sessionId !== undefined) addOnce(sessions, correlation.sessionId);
    if (correlation.transport !== undefined) addOnce(transports, correlation.transport);
    if (correlation.jsonRpcId !== undefined) jsonRpcIds.push(correlation.jsonRpcId);
  };
  for (const history of focus) {
    const accepted = history.accepted!;
    if (accepted.data.intentScope.kind === 'run') addOnce(runs, accepted.data.intentScope.runId);
    note(accepted.data.correlation, history.acceptedPosition);
    for (const { event, recorded } of stepsOf(history, 'RetryAttached')) note(event.data.correlation, recorded.position);
  }
  const calls = evidence.length;
  const seen = `${calls} call${calls === 1 ? '' : 's'} (JSON-RPC ids ${jsonRpcIds.map(String).join(', ') || 'none'})`;
  let verdict: ProcessVerdict;
  let summary: string;
  if (focus.length === 0) {
    verdict = 'unknown';
    summary = 'nothing recorded';
  } else if (runs.length > 1) {
    verdict = 'several';
    summary = `several: ${runs.length} declared runs (${runs.join(', ')}) over ${sessions.length} MCP session(s); ${seen}`;
  } else if (runs.length === 1) {
    verdict = 'one';
    summary =
      sessions.length > 1
        ? `one: every call declared run ${runs[0]}; it reconnected over ${sessions.length} MCP sessions (${sessions.join(', ')}); ${seen}`
        : `one: every call declared run ${runs[0]}${sessions.length === 1 ? ` on MCP session ${sessions[0]}` : ''}; ${seen}`;
  } else if (sessions.length === 1) {
    verdict = 'one';
    summary = `one: every call came on MCP session ${sessions[0]} (no run declared); ${seen}`;
  } else if (sessions.length > 1) {
    verdict = 'ambiguous';
    summary = `cannot tell: ${sessions.length} MCP sessions (${sessions.join(', ')}) and no declared run — a reconnect of one process and a second process look the same; ${seen}`;
  } else if (calls === 1) {
    verdict = 'one';
    summary = `one: a single call (no session or run recorded${transports.length > 0 ? `, transport ${transports.join(', ')}` : ''})`;
  } else {
    verdict = 'unknown';
    summary = `cannot tell: no MCP session or declared run recorded; ${seen}`;
  }
  return { question: QUESTIONS.processes, summary, evidence, facts: { verdict, calls, sessions, runs, transports, jsonRpcIds } };
}

// (2) Was the first call authorized and dispatched.
function firstCallAnswer(focus: readonly ExecutionHistory[]): Answer<FirstCallFacts> {
  const evidence: number[] = [];
  const executions = focus.map((history): FirstCallOfExecution => {
    const pick = <TType extends ExecutionEvent['type']>(type: TType) => {
      const found = stepsOf(history, type)[0];
      if (found !== undefined) evidence.push(found.recorded.position);
      return found?.event;
    };
    const requested = pick('ApprovalRequested');
    const granted = pick('ApprovalGranted');
    const refused = pick('ApprovalDenied');
    const authorized = pick('ExecutionAuthorized');
    const denied = pick('ExecutionDenied');
    const cancelled = pick('ExecutionCancelled');
    const dispatched = pick('Dispatched');
    const notSent = stepsOf(history, 'OutcomeObserved').find(
      ({ event }) => event.data.source === 'not_sent' && event.data.attempt === dispatched?.data.attempt,
    );
    if (notSent !== undefined) evidence.push(notSent.recorded.position);
    return {
      executionId: history.executionId,
      acceptedAt: history.accepted!.data.acceptedAt,
      approval:
        requested === undefined
          ? null
          : {
              requestedAt: requested.data.requestedAt,
              decision: granted ? 'granted' : refused ? 'denied' : 'pending',
              by: granted?.data.by ?? refused?.data.by ?? null,
            },
      authorized: authorized ? { basis: authorized.data.basis, at: authorized.data.authorizedAt } : null,
      denied: denied ? { basis: denied.data.basis, reason: denied.data.reason, at: denied.data.deniedAt } : null,
      cancelledAt: cancelled?.data.cancelledAt ?? null,
      firstDispatch: dispatched
        ? {
            attempt: dispatched.data.attempt,
            dispatcherId: dispatched.data.dispatcherId,
            at: dispatched.data.dispatchedAt,
            notSent: notSent === undefined ? null : (notSent.event.data.notSentReason ?? 'no reason recorded'),
          }
        : null,
    };
  });
  const line = (facts: FirstCallOfExecution): string => {
    const approval = facts.approval ? `approval ${facts.approval.decision}${facts.approval.by ? ` by ${facts.approval.by}` : ''}; ` : '';
    if (facts.denied) return `${approval}no: denied (${facts.denied.basis}: ${facts.denied.reason}) at ${facts.denied.at}; nothing was sent`;
    if (facts.cancelledAt) return `${approval}no: cancelled before dispatch at ${facts.cancelledAt}; nothing was sent`;
    if (!facts.authorized) return `${approval}not yet: accepted at ${facts.acceptedAt}, not authorized`;
    const authorized = `authorized (${facts.authorized.basis}) at ${facts.authorized.at}`;
    if (!facts.firstDispatch) return `${approval}${authorized}, not dispatched`;
    const dispatch = facts.firstDispatch;
    const sent = dispatch.notSent === null ? '' : `, but nothing left the gateway: ${dispatch.notSent}`;
    return `${approval}yes: ${authorized}, dispatched at ${dispatch.at} (attempt ${dispatch.attempt} by ${dispatch.dispatcherId})${sent}`;
  };
  return {
    question: QUESTIONS.firstCall,
    summary: perExecution(executions, line),
    evidence: sorted(evidence),
    facts: { executions },
  };
}

// (3) Did the target's outcome come back.
function outcomeAnswer(focus: readonly ExecutionHistory[]): Answer<OutcomeFacts> {
  const evidence: number[] = [];
  const executions = focus.map((history): OutcomeOfExecution => {
    const outcomes: ObservedOutcome[] = [];
    const probes: MarkerProbeFact[] = [];
    let review: OutcomeOfExecution['review'] = null;
    for (const { event, recorded } of history.steps) {
      const position = recorded.position;
      if (event.type === 'OutcomeObserved') {
        const { attempt, outcome, source, targetStatus, exitCode, observedAt } = event.data;
        const kind = source === 'not_sent' ? 'not_sent' : 'completed';
        const isError = kind === 'completed' && outcome === 'failed';
        outcomes.push({ attempt, kind, isError, source, targetStatus, exitCode, reason: event.data.notSentReason ?? null, at: observedAt, position });
      } else if (event.type === 'OutcomeUnknown') {
        const { attempt, reason, observedAt } = event.data;
        outcomes.push({ attempt, kind: 'unknown', isError: false, source: null, targetStatus: null, exitCode: null, reason, at: observedAt, position });
      } else if (event.type === 'MarkerProbed') {
        const { attempt, marker, probedAt } = event.data;
        probes.push({ attempt, marker, markerAttempt: event.data.markerAttempt ?? null, failure: event.data.failure ?? null, at: probedAt, position });
      } else if (event.type === 'ReviewRequired') {
        review = { reason: event.data.reason, resolution: null };
      } else if (event.type === 'ReviewResolved') {
        const required = review as OutcomeOfExecution['review'];
        review = { reason: required?.reason ?? 'unknown', resolution: event.data.resolution };
      } else {
        continue;
      }
      evidence.push(position);
    }
    const last = outcomes.at(-1);
    const dispatched = stepsOf(history, 'Dispatched').length > 0;
    const kind: OutcomeKind = last?.kind ?? (dispatched ? 'awaiting' : 'not_dispatched');
    return { executionId: history.executionId, kind, outcomes, probes, review };
  });
  const describe = (outcome: ObservedOutcome): string => {
    if (outcome.kind === 'unknown') return `attempt ${outcome.attempt}: outcome unknown (${outcome.reason}) at ${outcome.at}`;
    if (outcome.kind === 'not_sent') return `attempt ${outcome.attempt}: not sent, nothing reached the target (${outcome.reason}) at ${outcome.at}`;
    const status = [
      outcome.targetStatus === null ? undefined : `HTTP ${outcome.targetStatus}`,
      outcome.exitCode === null ? undefined : `exit ${outcome.exitCode}`,
    ].filter(Boolean);
    const from = outcome.source === 'marker' ? ' from the marker on the host' : outcome.source === 'task' ? ' from its task at the target, resumed after the answer was lost' : '';
    // An error answer is still an answer: the target may have acted before it gave it.
    const error = outcome.isError ? ', an error answer' : '';
    return `attempt ${outcome.attempt}: completed${status.length ? ` (${status.join(', ')}${error})` : error}${from} at ${outcome.at}`;
  };
  const probeLine = (probe: MarkerProbeFact): string =>
    probe.failure !== null
      ? `; marker probe failed: ${probe.failure}`
      : `; marker ${probe.marker}${probe.markerAttempt !== null && probe.markerAttempt !== probe.attempt ? ` (written by attempt ${probe.markerAttempt})` : ''}`;
  const line = (facts: OutcomeOfExecution): string => {
    const review = facts.review
      ? `; review ${facts.review.reason}${facts.review.resolution ? ` resolved ${facts.review.resolution}` : ' pending'}`
      : '';
    if (facts.kind === 'not_dispatched') return `nothing to come back: never dispatched${review}`;
    const probes = facts.probes.map(probeLine).join('');
    if (facts.kind === 'awaiting') return `not yet: dispatched, no outcome recorded${probes}${review}`;
    const answer = facts.kind === 'unknown' || facts.kind === 'not_sent' ? 'no' : 'yes';
    return `${answer}: ${facts.outcomes.map(describe).join('; ')}${probes}${review}`;
  };
  return { question: QUESTIONS.outcome, summary: perExecution(executions, line), evidence: sorted(evidence), facts: { executions } };
}

// (4) Did delivery fail after completion.
function deliveryAnswer(focus: readonly ExecutionHistory[]): Answer<DeliveryFacts> {
  const evidence: number[] = [];
  const executions = focus.map((history): DeliveryOfExecution => {
    let outcomeSeen = false;
    const failures: DeliveryOfExecution['failures'][number][] = [];
    const deliveries: DeliveryOfExecution['deliveries'][number][] = [];
    for (const { event, recorded } of history.steps) {
      const position = recorded.position;
      if (event.type === 'OutcomeObserved') {
        outcomeSeen = true;
      } else if (event.type === 'ResultDeliveryFailed') {
        failures.push({ at: event.data.failedAt, reason: event.data.reason, afterOutcome: outcomeSeen, position });
        evidence.push(position);
      } else if (event.type === 'ResultDelivered') {
        const sessionId = event.data.correlation.sessionId ?? null;
        deliveries.push({ at: event.data.deliveredAt, replayed: event.data.replayed, sessionId, position });
        evidence.push(position);
      }
    }
    const firstFailure = failures.find((failure) => failure.afterOutcome);
    return {
      executionId: history.executionId,
      failures,
      deliveries,
      failedAfterCompletion: firstFailure !== undefined,
      deliveredAfterFailure: firstFailure !== undefined && deliveries.some((delivery) => delivery.position > firstFailure.position),
    };
  });
  const line = (facts: DeliveryOfExecution): string => {
    const failure = facts.failures.find((candidate) => candidate.afterOutcome);
    if (failure !== undefined) {
      const later = facts.deliveries.find((delivery) => delivery.position > failure.position);
      const then = later
        ? `delivered later at ${later.at}${later.sessionId ? ` on session ${later.sessionId}` : ''}${later.replayed ? ' (replayed)' : ''}`
        : 'not delivered since';
      return `yes: the outcome was recorded but delivery failed at ${failure.at} (${failure.reason}); ${then}`;
    }
    const delivered = facts.deliveries[0];
    if (delivered !== undefined) return `no: delivered at ${delivered.at}${delivered.replayed ? ' (replayed)' : ''}`;
    return 'no delivery recorded';
  };
  return { question: QUESTIONS.delivery, summary: perExecution(executions, line), evidence: sorted(evidence), facts: { executions } };
}

// (5) Did the second call attach, carry a key, or create a new attempt.
function secondCallAnswer(
  focus: readonly ExecutionHistory[],
  lineage: readonly ExecutionHistory[],
  subjectExecution: ExecutionId | undefined,
): Answer<SecondCallFacts> {
  const evidence: number[] = [];
  const attaches: AttachedCall[] = [];
  const scopes: SecondCallFacts['scopes'] = [];
  const dispatches: SecondCallFacts['dispatches'] = [];
  let idempotencyKey = false;
  for (const history of focus) {
    for (const { event, recorded } of stepsOf(history, 'RetryAttached')) {
      evidence.push(recorded.position);
      attaches.push({
        executionId: history.executionId,
        at: event.data.attachedAt,
        returned: event.data.returned,
        replayed: event.data.replayed,
        jsonRpcId: event.data.correlation.jsonRpcId ?? null,
        sessionId: event.data.correlation.sessionId ?? null,
        position: recorded.position,
      });
    }
    const accepted = history.accepted!.data;
    scopes.push({ executionId: history.executionId, scope: accepted.record.intent_scope });
    if (accepted.intentScope.kind === 'key') {
      idempotencyKey = true;
      evidence.push(history.acceptedPosition);
    }
    const dispatched = stepsOf(history, 'Dispatched');
    dispatches.push({ executionId: history.executionId, attempts: dispatched.length });
    if (dispatched.length > 1) for (const { recorded } of dispatched.slice(1)) evidence.push(recorded.position);
  }

  const newExecutions: NewExecution[] = [];
  const start = subjectExecution === undefined ? 0 : lineage.findIndex((history) => history.executionId === subjectExecution);
  for (let index = Math.max(start, 0) + 1; index < lineage.length; index += 1) {
    const prior = lineage[index - 1]!;
    const next = lineage[index]!;
    newExecutions.push(newExecutionOf(prior, next));
    evidence.push(next.acceptedPosition);
  }

  const facts: SecondCallFacts = {
    attached: attaches.length > 0,
    attaches,
    idempotencyKey,
    scopes,
    newAttempt: dispatches.some((dispatch) => dispatch.attempts > 1),
    dispatches,
    newExecution: newExecutions.length > 0,
    newExecutions,
  };

  const parts: string[] = [];
  if (attaches.length === 0) {
    parts.push('no call attached to this execution');
  } else {
    for (const attach of attaches) {
      parts.push(
        `a call attached to ${attach.executionId} at ${attach.at} (JSON-RPC id ${attach.jsonRpcId ?? 'none'}` +
          `${attach.sessionId ? `, session ${attach.sessionId}` : ''}) and got ${attach.returned}${attach.replayed ? ', replayed' : ''}`,
      );
    }
  }
  const keyed = scopes.filter((scope) => scope.scope.startsWith('key:'));
  parts.push(
    idempotencyKey
      ? `idempotency key: ${keyed.map((scope) => scope.scope).join(', ')}`
      : `no idempotency key (scope ${[...new Set(scopes.map((scope) => scope.scope))].join(', ') || 'none'})`,
  );
  const redispatched = dispatches.filter((dispatch) => dispatch.attempts > 1);
  parts.push(
    redispatched.length > 0
      ? `new attempt: ${redispatched.map((dispatch) => `${dispatch.executionId} dispatched ${dispatch.attempts} times with the same key`).join(', ')}`
      : 'no new attempt (one dispatch at most per execution)',
  );
  for (const created of newExecutions) {
    parts.push(
      `new execution ${created.executionId} at ${created.acceptedAt} after ${created.priorExecutionId}: ${NEW_EXECUTION_REASONS[created.reason]}${created.inferred ? ' (inferred)' : ''}`,
    );
  }
  return { question: QUESTIONS.secondCall, summary: parts.join('; '), evidence: sorted(evidence), facts };
}

// (6) Was the agent told, and what.
function toldAnswer(focus: readonly ExecutionHistory[]): Answer<ToldFacts> {
  const evidence: number[] = [];
  const executions = focus.map((history): ToldOfExecution => {
    const calls: Array<CallTold & { answers: AnswerOfCall[] }> = [];
    const otherAnswers: ToldOfExecution['otherAnswers'] = [];
    for (const { event, recorded } of history.steps) {
      const position = recorded.position;
      if (event.type === 'ExecutionAccepted' || event.type === 'RetryAttached') {
        const at = event.type === 'ExecutionAccepted' ? event.data.acceptedAt : event.data.attachedAt;
        calls.push({ call: event.type === 'ExecutionAccepted' ? 'first' : 'retry', correlation: event.data.correlation, at, position, answers: [] });
        evidence.push(position);
        continue;
      }
      const answer = answerOf(event, position);
      if (answer === undefined) continue;
      evidence.push(position);
      // The call it answered: the latest before it with the same correlation (JSON-RPC ids repeat across connections).
      const call = calls.findLast((candidate) => sameCall(candidate.correlation, answer.correlation));
      if (call !== undefined) call.answers.push(answer.given);
      else otherAnswers.push({ ...answer.given, correlation: answer.correlation });
    }
    return { executionId: history.executionId, calls, otherAnswers };
  });
  const given = (answer: AnswerOfCall): string => {
    const told = answer.told === null ? 'given a result (what it told was not recorded then)' : `told ${toldWords(answer.told)}`;
    const why = answer.evidence ?? answer.reason;
    return `${told}; ${DELIVERY_WORDS[answer.delivery]}${why === null ? '' : ` (${why})`}`;
  };
  const line = (facts: ToldOfExecution): string => {
    if (facts.calls.length === 0) return 'no call recorded';
    const parts = facts.calls.map((call) => {
      const answers = call.answers.length === 0 ? 'no answer recorded (still waiting, cancelled, or its delivery not settled yet)' : call.answers.map(given).join(', then ');
      return `${callName(call)}: ${answers}`;
    });
    for (const other of facts.otherAnswers) parts.push(`an answer to [${correlationSummary(other.correlation)}]: ${given(other)}`);
    return parts.join('; ');
  };
  return { question: QUESTIONS.told, summary: perExecution(executions, line), evidence: sorted(evidence), facts: { executions } };
}

/** The answer an event records, with the correlation of the call it answered; `undefined` when it records none. */
function answerOf(event: ExecutionEvent, position: number): { given: AnswerOfCall; correlation: ProtocolCorrelation } | undefined {
  switch (event.type) {
    case 'AnswerGiven': {
      const { told, delivery, evidence, reason, settledAt, correlation } = event.data;
      return { given: { event: event.type, told, delivery, evidence: evidence ?? null, reason: reason ?? null, at: settledAt, position }, correlation };
    }
    case 'ResultDelivered': {
      const { told, evidence, deliveredAt, correlation } = event.data;
      const given: AnswerOfCall = { event: event.type, told: told ?? null, delivery: 'delivered', evidence: evidence ?? null, reason: null, at: deliveredAt, position };
      return { given, correlation };
    }
    case 'ResultDeliveryFailed': {
      const { told, reason, failedAt, correlation } = event.data;
      // Result delivery's own record that nobody was waiting names no call and answered nobody.
      if (told === undefined && correlationSummary(correlation) === '') return undefined;
      return { given: { event: event.type, told: told ?? null, delivery: 'not_delivered', evidence: null, reason, at: failedAt, position }, correlation };
    }
    default:
      return undefined;
  }
}

function sameCall(a: ProtocolCorrelation, b: ProtocolCorrelation): boolean {
  return a.jsonRpcId === b.jsonRpcId && a.sessionId === b.sessionId && a.transport === b.transport;
}

function callName(call: CallTold): string {
  const correlation = correlationSummary(call.correlation);
  return `${call.call === 'first' ? 'first call' : 'retry'}${correlation === '' ? '' : ` [${correlation}]`}`;
}

const DELIVERY_WORDS: { readonly [TDelivery in AnswerDelivery]: string } = {
  delivered: 'delivered',
  not_delivered: 'not delivered',
  unproven: 'delivery unproven',
};

/** What an answer told, in a few words: the state it carried, whether it was an error, and how it matched. */
export function toldWords(told: AnswerTold): string {
  const flags = [
    `${told.attempts} attempt${told.attempts === 1 ? '' : 's'}`,
    told.isError ? 'an error' : undefined,
    told.attached ? 'attached' : undefined,
    told.replayed ? 'replayed' : undefined,
    told.via === 'task' ? 'as a task' : told.via === 'task_result' ? "as the task's result" : undefined,
  ].filter(Boolean);
  return `${told.state} (${flags.join(', ')}) at ${told.givenAt}`;
}

const NEW_EXECUTION_REASONS: { readonly [TReason in NewExecutionReason]: string } = {
  no_prior: 'no earlier execution was found',
  new_intent_requested: 'the caller asked for a new intent (io.oncegate/new-intent) while the earlier one still matched',
  prior_cancelled: 'the earlier one was cancelled',
  prior_expired: 'the earlier one had expired',
  window_ended: "the earlier one's correlation window had ended",
  redelivery_grace_disabled: 'the earlier one was delivered and the tool has no redelivery grace',
  redelivery_grace_elapsed: 'the earlier one was delivered and its redelivery grace had elapsed',
};

/**
 * Why `next` is a new execution rather than an attach to `prior`: the domain's `matchRetry` run again on the
 * prior as it stood just before `next` was accepted. An expiry the gateway appended on the way to creating `next`
 * is left out, so the underlying reason (window ended) shows rather than its consequence.
 */
function newExecutionOf(prior: ExecutionHistory, next: ExecutionHistory): NewExecution {
  const before = prior.steps.filter(
    (step) => step.recorded.position < next.acceptedPosition && step.event.type !== 'ExecutionExpired',
  );
  const expiredBefore = prior.steps.some(
    (step) => step.event.type === 'ExecutionExpired' && step.recorded.position < next.acceptedPosition,
  );
  const state = before.reduce((folded, step) => evolve(folded, step.event), initialState());
  const acceptedAt = next.accepted!.data.acceptedAt;
  const decision = matchRetry({ prior: state, now: acceptedAt as IsoInstant, newIntent: false });
  const base = { executionId: next.executionId, priorExecutionId: prior.executionId, acceptedAt };
  if (decision.kind === 'attach') {
    return expiredBefore
      ? { ...base, reason: 'prior_expired', inferred: false }
      : { ...base, reason: 'new_intent_requested', inferred: true };
  }
  return { ...base, reason: decision.reason, inferred: false };
}

function timelineEntryOf(recorded: RecordedEvent): TimelineEntry {
  const metadata = recorded.metadata;
  const found = executionEventOf(recorded);
  const correlation = (metadata['correlation'] ?? dataField(recorded, 'correlation') ?? {}) as ProtocolCorrelation;
  const actor = metadata['actor'];
  return {
    time: recorded.recordedAt,
    position: recorded.position,
    stream: recorded.streamId,
    revision: recorded.revision,
    type: recorded.type,
    executionId: found?.executionId ?? (typeof dataField(recorded, 'executionId') === 'string' ? String(dataField(recorded, 'executionId')) : null),
    actor: typeof actor === 'string' ? actor : null,
    correlation: correlationSummary(correlation),
    detail: found === undefined ? otherDetail(recorded) : detailOf(found.event),
  };
}

export function correlationSummary(correlation: ProtocolCorrelation): string {
  return [
    correlation.jsonRpcId === undefined ? undefined : `rpc=${correlation.jsonRpcId}`,
    correlation.sessionId === undefined ? undefined : `session=${correlation.sessionId}`,
    correlation.sseEventId === undefined ? undefined : `sse=${correlation.sseEventId}`,
    correlation.transport === undefined ? undefined : `transport=${correlation.transport}`,
  ]
    .filter(Boolean)
    .join(' ');
}

/** One line per event, for the timeline. */
export function detailOf(event: ExecutionEvent): string {
  switch (event.type) {
    case 'ExecutionAccepted': {
      const { record, operationClass, windowEndsAt, fingerprint } = event.data;
      return `${record.tool} by ${record.actor}, scope ${record.intent_scope}, ${operationClass}, window until ${windowEndsAt ?? 'confirmed'}, ${fingerprint}`;
    }
    case 'RetryAttached':
      return `returned ${event.data.returned}${event.data.replayed ? ', replayed' : ''}`;
    case 'ApprovalRequested':
      return `by ${event.data.requestedBy}: ${event.data.reason}`;
    case 'ApprovalGranted':
    case 'ApprovalDenied':
      return `by ${event.data.by}: ${event.data.reason}`;
    case 'ExecutionAuthorized':
      return `basis ${event.data.basis}`;
    case 'ExecutionDenied':
      return `basis ${event.data.basis}: ${event.data.reason}`;
    case 'Dispatched':
      return `attempt ${event.data.attempt} by ${event.data.dispatcherId}, key ${event.data.idempotencyKey}`;
    case 'OutcomeObserved': {
      const { attempt, outcome, source, targetStatus, exitCode } = event.data;
      if (source === 'not_sent') return `attempt ${attempt} failed: nothing was sent: ${event.data.notSentReason ?? 'no reason recorded'}`;
      const status = targetStatus === null ? '' : ` HTTP ${targetStatus}`;
      const exit = exitCode === null ? '' : ` exit ${exitCode}`;
      return `attempt ${attempt} completed${outcome === 'failed' ? ' with an error answer' : ''}${status}${exit} (from ${source})`;
    }
    case 'AttemptProgressed':
      return `attempt ${event.data.attempt}: ${progressWords(event.data)}`;
    case 'OutcomeUnknown':
      return `attempt ${event.data.attempt}: ${event.data.reason}`;
    case 'AttemptTaskStarted':
      return `attempt ${event.data.attempt} runs as a task at the target (${taskWords(event.data.task)})`;
    case 'AttemptTaskChecked':
      return `attempt ${event.data.attempt}: its task resumed, ${event.data.finding}: ${event.data.reason}`;
    case 'StatusQueried':
      return `attempt ${event.data.attempt}: precondition ${event.data.preconditionHolds ? 'holds' : 'no longer holds'}${event.data.observedStatus ? ` (${event.data.observedStatus})` : ''}`;
    case 'MarkerProbed': {
      const { attempt, marker, exitStatus, markerAttempt, failure, keptOutput } = event.data;
      if (marker === 'probe_failed') return `attempt ${attempt}: marker probe failed: ${failure ?? 'no reason recorded'}`;
      const writer = markerAttempt === undefined || markerAttempt === null ? '' : ` (written by attempt ${markerAttempt})`;
      const exit = exitStatus === null ? '' : `, exit ${exitStatus}`;
      const kept = keptOutput ? `, output kept on ${keptOutput.host} at ${keptOutput.paths.join(', ')}` : '';
      return `attempt ${attempt}: marker ${marker}${writer}${exit}${kept}`;
    }
    case 'ReviewRequired':
      return `attempt ${event.data.attempt}: ${event.data.reason}`;
    case 'ReviewResolved':
      return `${event.data.resolution}${event.data.resend === true ? ' with a resend' : ''} by ${event.data.by}: ${event.data.reason}`;
    case 'ResultDelivered': {
      const delivered = event.data.replayed ? 'replayed' : 'delivered';
      return event.data.told === undefined ? delivered : `${delivered}; told ${toldWords(event.data.told)}`;
    }
    case 'ResultDeliveryFailed':
      return event.data.told === undefined ? event.data.reason : `${event.data.reason}; told ${toldWords(event.data.told)}`;
    case 'AnswerGiven': {
      const { delivery, evidence, reason } = event.data;
      const why = evidence ?? reason;
      return `told ${toldWords(event.data.told)}; ${DELIVERY_WORDS[delivery]}${why === undefined ? '' : ` (${why})`}`;
    }
    case 'ExecutionCancelled':
    case 'CancellationRequested':
      return `trigger ${event.data.trigger}`;
    case 'ExecutionExpired':
      return `window ended ${event.data.windowEndedAt}`;
    default:
      return assertNever(event);
  }
}

/** A task reference in a line: its task id when it names one, else its JSON (cut). */
function taskWords(task: Readonly<Record<string, unknown>>): string {
  const id = task['taskId'];
  return typeof id === 'string' ? `task ${id}` : JSON.stringify(task).slice(0, 120);
}

function otherDetail(recorded: RecordedEvent): string {
  if (recorded.type === 'IntentClaimed') return `claimed for ${String(dataField(recorded, 'executionId'))}`;
  return '';
}

function dataField(recorded: RecordedEvent, field: string): unknown {
  const data = recorded.data;
  return typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[field] : undefined;
}

function perExecution<T extends { readonly executionId: string }>(items: readonly T[], line: (item: T) => string): string {
  if (items.length === 0) return 'nothing recorded';
  if (items.length === 1) return line(items[0]!);
  return items.map((item) => `${item.executionId}: ${line(item)}`).join(' | ');
}

function addOnce<T>(list: T[], value: T): void {
  if (!list.includes(value)) list.push(value);
}

function sorted(positions: number[]): number[] {
  return [...new Set(positions)].sort((a, b) => a - b);
}

function assertNever(value: never): never {
  throw new TypeError(`unexpected event ${JSON.stringify(value)}`);
}

/** The investigation as text for a terminal. */
export function formatInvestigation(investigation: Investigation): string {
  const subject =
    'executionId' in investigation.subject
      ? `execution ${investigation.subject.executionId}`
      : `fingerprint ${investigation.subject.fingerprint}`;
  if (!investigation.found) return `Nothing is recorded for ${subject}.\n`;
  const lines = [`Investigation of ${subject}`, '', 'Executions:'];
  for (const execution of investigation.executions) {
    lines.push(
      `  ${execution.executionId}  ${execution.tool} by ${execution.actor}  scope ${execution.scope}  accepted ${execution.acceptedAt}  now ${execution.status}`,
    );
    for (const attempt of execution.attempts) {
      lines.push(`    attempt ${attempt.attempt}  dispatcher: ${attempt.dispatcherId}  dispatched ${attempt.dispatchedAt}  #${attempt.position}`);
    }
  }
  lines.push('', 'Timeline:');
  for (const entry of investigation.timeline) {
    const who = entry.actor ? `  ${entry.actor}` : '';
    const correlation = entry.correlation ? `  [${entry.correlation}]` : '';
    lines.push(`  ${entry.time}  #${entry.position}  ${entry.stream}@${entry.revision}  ${entry.type}${who}${correlation}  ${entry.detail}`);
  }
  lines.push('', 'Answers:');
  const answers = investigation.answers;
  [answers.processes, answers.firstCall, answers.outcome, answers.delivery, answers.secondCall, answers.told].forEach((answer, index) => {
    lines.push(`  ${index + 1}. ${answer.question}`, `     ${answer.summary}`);
    lines.push(`     evidence: ${answer.evidence.length > 0 ? answer.evidence.map((position) => `#${position}`).join(', ') : 'none'}`);
  });
  return `${lines.join('\n')}\n`;
}
