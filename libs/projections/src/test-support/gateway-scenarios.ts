/**
 * The gateway's retry scenarios (test/e2e/retry-matching.e2e.spec.ts) as recorded histories, so the projections
 * and the investigation are tested on the event sequences the gateway really writes.
 */
import type { ProtocolCorrelation } from '@oncegate/domain';
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

function deliver(history: RecordedHistory, executionId: ReturnType<typeof executionIdOf>, now: string, correlation: ProtocolCorrelation, replayed = false) {
  history.run(executionId, { type: 'RecordResultDelivered', now: now as never, correlation, replayed, evidence: 'a later request on the same MCP session after the response was written' }, service('result-delivery'));
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
  history.run(
    executionId,
    { type: 'RecordResultDeliveryFailed', now: at(510), correlation: first, reason: 'response stream closed before write' },
    service('result-delivery'),
  );
  history.run(executionId, { type: 'AttachRetry', now: at(5_000), correlation: second }, { actor: 'agent:deploy-bot', correlation: second });
  deliver(history, executionId, at(5_010), second);
  return { history, executionId, fingerprint, first, second };
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
  deliver(history, first, at(2_010), replay, true);
  const again: ProtocolCorrelation = { jsonRpcId: 3, sessionId: 'session-g', transport: http };
  const acceptedAt = options.newIntent === true ? 3_000 : 70_000;
  history.accept(second, { fingerprint, arguments: { name: 'grace', value: 'v1' }, correlation: again, now: at(acceptedAt) });
  runToOutcome(history, second, acceptedAt);
  deliver(history, second, at(acceptedAt + 600), again);
  return { history, first, second, fingerprint, secondAcceptedAt: at(acceptedAt) };
}

export { T0 };
