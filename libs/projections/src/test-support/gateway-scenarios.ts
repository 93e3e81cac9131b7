/**
 * The gateway's retry scenarios (test/e2e/retry-matching.e2e.spec.ts) as recorded histories, so the projections
 * and the investigation are tested on the event sequences the gateway really writes.
 */
import type { AnswerSettlement, AnswerTold, ProtocolCorrelation } from '@oncegate/domain';
import { at, executionIdOf, fingerprintOf, RecordedHistory, T0 } from './recorded-history';

const http = 'streamable-http';
const service = (name: string) => ({ actor: `service:${name}` });

/** Authorized → Dispatched → OutcomeObserved (200) for an accepted execution, starting `offset` ms after T0. */
function runToOutcome(history: RecordedHistory, executionId: ReturnType<typeof executionIdOf>, offset: number): void {
  history.run(executionId, { type: 'AuthorizeExecution', now: at(offset + 10), basis: 'policy' }, service('authorization'));
  history.run(executionId, { type: 'RecordDispatch', now: at(offset + 20), dispatcherId: 'dispatcher-http@host/1' }, service('dispatcher-http'));
  history.run(
    executionId,
    {
      type: 'ObserveOutcome',
      now: at(offset + 500),
      attempt: 1,
      outcome: 'succeeded',
      source: 'response',
      targetStatus: 200,
      exitCode: null,
      resultRef: `result:${executionId}:1`,
      resultDigest: `sha256:${'0f'.repeat(32)}`,
    },
    service('dispatcher-http'),
  );
}

const EVIDENCE = 'a later request on the same MCP session after the response was written';

/**
 * An answer to a call, recorded as the gateway records it once its delivery settled (`RecordAnswer`): the decider
 * makes it a ResultDelivered / ResultDeliveryFailed for a result whose delivery was proven or refused, else an
 * AnswerGiven. `told` defaults to a completed result given 5 ms before it settled.
 */
export function answer(
  history: RecordedHistory,
  executionId: ReturnType<typeof executionIdOf>,
  now: string,
  correlation: ProtocolCorrelation,
  told: Partial<AnswerTold> = {},
  delivery: AnswerSettlement = { kind: 'delivered', evidence: EVIDENCE },
) {
  const given: AnswerTold = { state: 'completed', isError: false, attempts: 1, attached: false, replayed: false, givenAt: at(Date.parse(now) - Date.parse(T0) - 5), ...told };
  return history.run(executionId, { type: 'RecordAnswer', now: now as never, correlation, told: given, delivery }, { ...service('result-delivery'), correlation });
}

/** A first call's result, proven delivered by a later request on its session. */
function deliver(history: RecordedHistory, executionId: ReturnType<typeof executionIdOf>, now: string, correlation: ProtocolCorrelation) {
  answer(history, executionId, now, correlation);
}

/**
 * The connection dropped while the target worked; the result could not be delivered; the agent (same declared run)
 * reconnected on a new MCP session and called again with a new JSON-RPC id, and got the stored result.
 */
export function droppedConnectionThenAttach() {
  const history = new RecordedHistory();
  const executionId = executionIdOf('A');
  const fingerprint = fingerprintOf('aa');
  const first: ProtocolCorrelation = { jsonRpcId: 3, sessionId: 'session-1', transport: http };
  const second: ProtocolCorrelation = { jsonRpcId: 1, sessionId: 'session-2', transport: http };
  history.accept(executionId, { fingerprint, scope: { kind: 'run', runId: 'run-dropped-connection' }, correlation: first });
  runToOutcome(history, executionId, 0);
  answer(history, executionId, at(510), first, {}, { kind: 'not_delivered', reason: 'response stream closed before write' });
  history.run(executionId, { type: 'AttachRetry', now: at(5_000), correlation: second }, { actor: 'agent:deploy-bot', correlation: second });
  answer(history, executionId, at(5_010), second, { state: 'completed_result_not_delivered', attached: true });
  return { history, executionId, fingerprint, first, second };
}

/**
 * The call waited past `call_wait` while the target held the request: answered "still in progress" (dispatched), and a
 * later tools/list on the session proved it arrived. The outcome came; the agent called again on the same session,
 * attached and was given the result, and the session was closed before anything proved that one arrived.
 */
export function inProgressThenRetry() {
  const history = new RecordedHistory();
  const executionId = executionIdOf('Q');
  const fingerprint = fingerprintOf('ab');
  const first: ProtocolCorrelation = { jsonRpcId: 2, sessionId: 'session-w', transport: http };
  const retry: ProtocolCorrelation = { jsonRpcId: 4, sessionId: 'session-w', transport: http };
  history.accept(executionId, { fingerprint, correlation: first });
  history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, service('authorization'));
  history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: 'dispatcher-http@host/1' }, service('dispatcher-http'));
  answer(history, executionId, at(1_100), first, { state: 'dispatched', givenAt: at(1_000) }, { kind: 'delivered', evidence: 'a later tools/list message on the same MCP session, received after the response was written' });
  history.run(
    executionId,
    { type: 'ObserveOutcome', now: at(3_000), attempt: 1, outcome: 'succeeded', source: 'response', targetStatus: 200, exitCode: null, resultRef: null, resultDigest: null },
    service('dispatcher-http'),
  );
  history.run(executionId, { type: 'AttachRetry', now: at(4_000), correlation: retry }, { actor: 'agent:deploy-bot', correlation: retry });
  answer(history, executionId, at(6_000), retry, { state: 'completed', attached: true, givenAt: at(4_010) }, { kind: 'unproven', reason: 'the MCP session closed before anything proved receipt' });
  return { history, executionId, fingerprint, first, retry };
}

/** The same arguments from two actors: two fingerprints, two executions, nothing shared. */
export function twoActors() {
  const history = new RecordedHistory();
  const a = { executionId: executionIdOf('B'), fingerprint: fingerprintOf('bb'), actor: 'agent:deploy-bot' };
  const b = { executionId: executionIdOf('C'), fingerprint: fingerprintOf('cc'), actor: 'agent:second-agent' };
  const args = { name: 'shared', value: 'x' };
  history.accept(a.executionId, { fingerprint: a.fingerprint, actor: a.actor, arguments: args, correlation: { jsonRpcId: 1, sessionId: 'session-a', transport: http } });
  runToOutcome(history, a.executionId, 0);
  deliver(history, a.executionId, at(600), { jsonRpcId: 1, sessionId: 'session-a', transport: http });
  history.accept(b.executionId, {
    fingerprint: b.fingerprint,
    actor: b.actor,
    arguments: args,
    now: at(1_000),
    correlation: { jsonRpcId: 1, sessionId: 'session-b', transport: http },
  });
  runToOutcome(history, b.executionId, 1_000);
  deliver(history, b.executionId, at(1_600), { jsonRpcId: 1, sessionId: 'session-b', transport: http });
  return { history, a, b };
}

/**
 * Delivered; repeated inside the 60 s grace (replayed); repeated after the grace: a new execution under the same
 * fingerprint. With `newIntent`, the repeat comes inside the grace instead (the caller asked for a new intent).
 */
export function newExecutionAfterGrace(options: { readonly newIntent?: boolean } = {}) {
  const history = new RecordedHistory();
  const first = executionIdOf('D');
  const second = executionIdOf('E');
  const fingerprint = fingerprintOf('dd');
  const session: ProtocolCorrelation = { jsonRpcId: 1, sessionId: 'session-g', transport: http };
  history.accept(first, { fingerprint, arguments: { name: 'grace', value: 'v1' }, correlation: session });
  runToOutcome(history, first, 0);
  deliver(history, first, at(600), session);
  const replay: ProtocolCorrelation = { jsonRpcId: 2, sessionId: 'session-g', transport: http };
  history.run(first, { type: 'AttachRetry', now: at(2_000), correlation: replay }, { actor: 'agent:deploy-bot', correlation: replay });
  answer(history, first, at(2_010), replay, { state: 'delivered', attached: true, replayed: true });
  const again: ProtocolCorrelation = { jsonRpcId: 3, sessionId: 'session-g', transport: http };
  const acceptedAt = options.newIntent === true ? 3_000 : 70_000;
  history.accept(second, { fingerprint, arguments: { name: 'grace', value: 'v1' }, correlation: again, now: at(acceptedAt) });
  runToOutcome(history, second, acceptedAt);
  deliver(history, second, at(acceptedAt + 600), again);
  return { history, first, second, fingerprint, secondAcceptedAt: at(acceptedAt) };
}

export { T0 };
