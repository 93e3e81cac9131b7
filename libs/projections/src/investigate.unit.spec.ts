import { describe, expect, it } from 'vitest';
import { detailOf, formatInvestigation, investigate, parseInvestigationSubject, InvalidInvestigationSubjectError } from './investigate';
import { answer, droppedConnectionThenAttach, inProgressThenRetry, newExecutionAfterGrace, twoActors } from './test-support/gateway-scenarios';
import { at, executionIdOf, fingerprintOf, RecordedHistory } from './test-support/recorded-history';

const positionsOf = (events: { type: string; position: number }[], type: string) =>
  events.filter((event) => event.type === type).map((event) => event.position);

describe('investigate', () => {
  describe('given a dropped connection, then the same call again from the same run on a new session', () => {
    const { history, executionId, fingerprint } = droppedConnectionThenAttach();
    const events = history.events;
    const inv = investigate(events, { executionId });
    const executionEvents = events.filter((event) => event.streamId.startsWith('execution-'));

    it('then the timeline lists every event of the execution and its claim, in order', () => {
      expect(inv.found).toBe(true);
      expect(inv.timeline.map((entry) => entry.type)).toEqual([
        'IntentClaimed',
        'ExecutionAccepted',
        'ExecutionAuthorized',
        'Dispatched',
        'OutcomeObserved',
        'ResultDeliveryFailed',
        'RetryAttached',
        'ResultDelivered',
      ]);
      const attached = inv.timeline.find((entry) => entry.type === 'RetryAttached')!;
      expect(attached).toMatchObject({ stream: `execution-${executionId}`, revision: 5, actor: 'agent:deploy-bot' });
      expect(attached.correlation).toBe('rpc=1 session=session-2 transport=streamable-http');
      expect(inv.executions).toEqual([expect.objectContaining({ executionId, fingerprint, status: 'delivered', scope: 'run:run-dropped-connection' })]);
    });

    it('then (1) it is one process: one declared run, reconnected over two MCP sessions', () => {
      expect(inv.answers.processes.facts).toEqual({
        verdict: 'one',
        calls: 2,
        sessions: ['session-1', 'session-2'],
        runs: ['run-dropped-connection'],
        transports: ['streamable-http'],
        jsonRpcIds: [3, 1],
      });
      expect(inv.answers.processes.summary).toMatch(/^one: every call declared run run-dropped-connection; it reconnected over 2 MCP sessions/);
      expect(inv.answers.processes.evidence).toEqual([
        ...positionsOf(executionEvents, 'ExecutionAccepted'),
        ...positionsOf(executionEvents, 'RetryAttached'),
      ]);
    });

    it('then (2) the first call was authorized and dispatched once', () => {
      const [first] = inv.answers.firstCall.facts.executions;
      expect(first).toMatchObject({
        authorized: { basis: 'policy', at: at(10) },
        denied: null,
        cancelledAt: null,
        firstDispatch: { attempt: 1, dispatcherId: 'dispatcher-http@host/1', at: at(20) },
      });
      expect(inv.answers.firstCall.summary).toBe(
        `yes: authorized (policy) at ${at(10)}, dispatched at ${at(20)} (attempt 1 by dispatcher-http@host/1)`,
      );
      expect(inv.answers.firstCall.evidence).toEqual([
        ...positionsOf(executionEvents, 'ExecutionAuthorized'),
        ...positionsOf(executionEvents, 'Dispatched'),
      ]);
    });

    it("then (3) the target's answer came back: completed", () => {
      const [outcome] = inv.answers.outcome.facts.executions;
      expect(outcome).toMatchObject({ kind: 'completed', review: null });
      expect(outcome!.outcomes).toEqual([
        expect.objectContaining({ attempt: 1, kind: 'completed', isError: false, targetStatus: 200, at: at(500) }),
      ]);
      expect(inv.answers.outcome.summary).toBe(`yes: attempt 1: completed (HTTP 200) at ${at(500)}`);
      expect(inv.answers.outcome.evidence).toEqual(positionsOf(executionEvents, 'OutcomeObserved'));
    });

    it('then (4) delivery failed after completion, and the retry got it delivered later', () => {
      const [delivery] = inv.answers.delivery.facts.executions;
      expect(delivery).toMatchObject({ failedAfterCompletion: true, deliveredAfterFailure: true });
      expect(delivery!.failures).toEqual([expect.objectContaining({ reason: 'response stream closed before write', afterOutcome: true })]);
      expect(delivery!.deliveries).toEqual([expect.objectContaining({ sessionId: 'session-2', replayed: false })]);
      expect(inv.answers.delivery.summary).toBe(
        `yes: the outcome was recorded but delivery failed at ${at(510)} (response stream closed before write); delivered later at ${at(5_010)} on session session-2`,
      );
      expect(inv.answers.delivery.evidence).toEqual([
        ...positionsOf(executionEvents, 'ResultDeliveryFailed'),
        ...positionsOf(executionEvents, 'ResultDelivered'),
      ]);
    });

    it('then (5) the second call attached and got the stored result, with no key, no new attempt, no new execution', () => {
      const facts = inv.answers.secondCall.facts;
      expect(facts).toMatchObject({ attached: true, idempotencyKey: false, newAttempt: false, newExecution: false, newExecutions: [] });
      expect(facts.attaches).toEqual([
        expect.objectContaining({ executionId, returned: 'stored_result', replayed: false, jsonRpcId: 1, sessionId: 'session-2' }),
      ]);
      expect(facts.dispatches).toEqual([{ executionId, attempts: 1 }]);
      expect(inv.answers.secondCall.summary).toContain('got stored_result');
      expect(inv.answers.secondCall.summary).toContain('no idempotency key (scope run:run-dropped-connection)');
      expect(inv.answers.secondCall.evidence).toEqual(positionsOf(executionEvents, 'RetryAttached'));
    });

    it('then the same answers come for its fingerprint', () => {
      const byFingerprint = investigate(events, { fingerprint });
      expect(byFingerprint.answers).toEqual(inv.answers);
    });
  });

  describe('given the same arguments from two actors', () => {
    const { history, a, b } = twoActors();

    it('then each fingerprint has its own single execution and neither saw a second call', () => {
      expect(a.fingerprint).not.toBe(b.fingerprint);
      for (const side of [a, b]) {
        const inv = investigate(history.events, { fingerprint: side.fingerprint });
        expect(inv.executions.map((execution) => [execution.executionId, execution.actor])).toEqual([[side.executionId, side.actor]]);
        expect(inv.timeline.every((entry) => entry.executionId === side.executionId)).toBe(true);
        expect(inv.answers.processes.facts).toMatchObject({ verdict: 'one', calls: 1, runs: [] });
        expect(inv.answers.firstCall.facts.executions[0]!.firstDispatch).not.toBeNull();
        expect(inv.answers.outcome.facts.executions[0]!.kind).toBe('completed');
        expect(inv.answers.delivery.facts.executions[0]).toMatchObject({ failedAfterCompletion: false, failures: [] });
        expect(inv.answers.delivery.summary).toMatch(/^no: delivered at /);
        expect(inv.answers.secondCall.facts).toMatchObject({ attached: false, newAttempt: false, newExecution: false, idempotencyKey: false });
      }
      const [sessionA, sessionB] = [a, b].map(
        (side) => investigate(history.events, { executionId: side.executionId }).answers.processes.facts.sessions,
      );
      expect(sessionA).toEqual(['session-a']);
      expect(sessionB).toEqual(['session-b']);
    });
  });

  describe('given a delivered call repeated inside the grace and again after it', () => {
    const { history, first, second, fingerprint, secondAcceptedAt } = newExecutionAfterGrace();
    const inv = investigate(history.events, { fingerprint });

    it('then the fingerprint has two executions, and (5) names the new one and why', () => {
      expect(inv.executions.map((execution) => execution.executionId)).toEqual([first, second]);
      const facts = inv.answers.secondCall.facts;
      expect(facts.newExecution).toBe(true);
      expect(facts.newExecutions).toEqual([
        { executionId: second, priorExecutionId: first, acceptedAt: secondAcceptedAt, reason: 'redelivery_grace_elapsed', inferred: false },
      ]);
      expect(facts.attaches).toEqual([expect.objectContaining({ executionId: first, returned: 'stored_result', replayed: true })]);
      expect(facts.newAttempt).toBe(false);
      expect(inv.answers.secondCall.summary).toContain(`new execution ${second} at ${secondAcceptedAt} after ${first}: the earlier one was delivered and its redelivery grace had elapsed`);
      const acceptedOfSecond = history.events.find((event) => event.type === 'ExecutionAccepted' && event.streamId.endsWith(second))!;
      expect(inv.answers.secondCall.evidence).toContain(acceptedOfSecond.position);
    });

    it('then (1) all three calls came on one MCP session, and (2)-(4) cover both executions', () => {
      expect(inv.answers.processes.facts).toMatchObject({ verdict: 'one', calls: 3, sessions: ['session-g'], jsonRpcIds: [1, 2, 3] });
      expect(inv.answers.firstCall.facts.executions.map((execution) => execution.firstDispatch?.attempt)).toEqual([1, 1]);
      expect(inv.answers.outcome.facts.executions.map((execution) => execution.kind)).toEqual(['completed', 'completed']);
      expect(inv.answers.delivery.facts.executions[0]!.deliveries.map((delivery) => delivery.replayed)).toEqual([false, true]);
      expect(inv.answers.outcome.summary).toContain(`${first}: yes`);
    });

    it('then investigating the first execution alone still reports the later execution of its fingerprint', () => {
      const alone = investigate(history.events, { executionId: first });
      expect(alone.executions.map((execution) => execution.executionId)).toEqual([first]);
      expect(alone.answers.secondCall.facts.newExecutions.map((created) => created.executionId)).toEqual([second]);
      expect(investigate(history.events, { executionId: second }).answers.secondCall.facts.newExecutions).toEqual([]);
    });

    it('then a repeat inside the grace that still made a new execution is read as an explicit new intent', () => {
      const asked = newExecutionAfterGrace({ newIntent: true });
      const created = investigate(asked.history.events, { fingerprint: asked.fingerprint }).answers.secondCall.facts.newExecutions;
      expect(created).toEqual([expect.objectContaining({ reason: 'new_intent_requested', inferred: true })]);
    });
  });

  describe('given an irreversible call whose outcome is unknown and held for review, retried with an idempotency key', () => {
    const history = new RecordedHistory();
    const executionId = executionIdOf('F');
    const correlation = { jsonRpcId: 9, sessionId: 'session-x', transport: 'streamable-http' };
    history.accept(executionId, {
      fingerprint: fingerprintOf('ee'),
      scope: { kind: 'key', key: 'pay-42', source: 'caller' },
      operationClass: 'irreversible',
      correlation,
    });
    history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, { actor: 'service:authorization' });
    history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: 'd1' }, { actor: 'service:dispatcher-http' });
    history.run(executionId, { type: 'RecordUnknownOutcome', now: at(30_000), attempt: 1, reason: 'timeout_after_send' }, { actor: 'service:dispatcher-http' });
    history.run(executionId, { type: 'RequireReview', now: at(30_001), reason: 'irreversible_outcome_unknown' }, { actor: 'service:dispatcher-http' });
    const retry = { jsonRpcId: 1, sessionId: 'session-y', transport: 'streamable-http' };
    history.run(executionId, { type: 'AttachRetry', now: at(40_000), correlation: retry }, { actor: 'agent:deploy-bot', correlation: retry });
    const inv = investigate(history.events, { executionId });

    it('then (3) says no outcome came back and the review is pending, (5) the key and the review hold, and (1) cannot tell', () => {
      expect(inv.answers.outcome.facts.executions[0]).toMatchObject({ kind: 'unknown', review: { reason: 'irreversible_outcome_unknown', resolution: null } });
      expect(inv.answers.outcome.summary).toBe(
        `no: attempt 1: outcome unknown (timeout_after_send) at ${at(30_000)}; review irreversible_outcome_unknown pending`,
      );
      expect(inv.answers.delivery.summary).toBe('no delivery recorded');
      expect(inv.answers.secondCall.facts).toMatchObject({ attached: true, idempotencyKey: true, newAttempt: false });
      expect(inv.answers.secondCall.facts.attaches[0]!.returned).toBe('review_hold');
      expect(inv.answers.secondCall.summary).toContain('idempotency key: key:pay-42');
      expect(inv.answers.processes.facts.verdict).toBe('ambiguous');
    });
  });

  describe('given review resolutions as the timeline shows them', () => {
    it('then a resend is named beside the resolution, and a plain one is not', () => {
      const resolved = (resend?: boolean) =>
        detailOf({ type: 'ReviewResolved', schemaVersion: 1, data: { resolution: 'not_executed', by: 'user:alice', reason: 'no charge', resolvedAt: at(5), ...(resend === undefined ? {} : { resend }) } });
      expect(resolved(true)).toBe('not_executed with a resend by user:alice: no charge');
      expect(resolved()).toBe('not_executed by user:alice: no charge');
    });
  });

  describe('given a payment the target took and then answered 500', () => {
    it('when investigated, then (3) says its answer came back: completed, an error answer, never a failure in which nothing was sent', () => {
      const history = new RecordedHistory();
      const executionId = executionIdOf('P');
      const dispatcher = { actor: 'service:dispatcher-http' };
      history.accept(executionId, { fingerprint: fingerprintOf('b1'), operationClass: 'irreversible' });
      history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, { actor: 'service:authorization' });
      history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: 'd1' }, dispatcher);
      history.run(
        executionId,
        { type: 'ObserveOutcome', now: at(30), attempt: 1, outcome: 'failed', source: 'response', targetStatus: 500, exitCode: null, resultRef: 'r', resultDigest: null },
        dispatcher,
      );
      const inv = investigate(history.events, { executionId });

      expect(inv.answers.outcome.facts.executions[0]).toMatchObject({ kind: 'completed', outcomes: [{ kind: 'completed', isError: true, targetStatus: 500 }] });
      expect(inv.answers.outcome.summary).toBe(`yes: attempt 1: completed (HTTP 500, an error answer) at ${at(30)}`);
      expect(inv.timeline.at(-1)!.detail).toBe('attempt 1 completed with an error answer HTTP 500 (from response)');
      expect(inv.executions[0]!.status).toBe('completed');
    });
  });

  describe('given a remote command whose host presented another key than the pinned one', () => {
    const mismatch = 'host key mismatch: 10.0.0.5:22 presented ssh-ed25519 key SHA256:kq, but the contract pins ssh-ed25519 SHA256:3f';
    const dispatcher = { actor: 'service:dispatcher-ssh' };

    it('when the attempt is refused before anything is sent, then (2) says nothing left the gateway and (3) that nothing came back', () => {
      const history = new RecordedHistory();
      const executionId = executionIdOf('G');
      history.accept(executionId, { fingerprint: fingerprintOf('a1'), operationClass: 'remote_command' });
      history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, { actor: 'service:authorization' });
      history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: 'd1' }, dispatcher);
      history.run(
        executionId,
        { type: 'ObserveOutcome', now: at(30), attempt: 1, outcome: 'failed', source: 'not_sent', notSentReason: mismatch, targetStatus: null, exitCode: null, resultRef: null, resultDigest: null },
        dispatcher,
      );
      const inv = investigate(history.events, { executionId });

      expect(inv.answers.outcome.facts.executions[0]!.kind).toBe('not_sent');
      expect(inv.answers.outcome.summary).toBe(`no: attempt 1: not sent, nothing reached the target (${mismatch}) at ${at(30)}`);
      expect(inv.answers.firstCall.summary).toBe(`yes: authorized (policy) at ${at(10)}, dispatched at ${at(20)} (attempt 1 by d1), but nothing left the gateway: ${mismatch}`);
      expect(inv.timeline.at(-1)!.detail).toBe(`attempt 1 failed: nothing was sent: ${mismatch}`);
    });

    it('when the marker probe meets it after a lost connection, then (3) names the failed probe beside the review it caused', () => {
      const history = new RecordedHistory();
      const executionId = executionIdOf('H');
      history.accept(executionId, { fingerprint: fingerprintOf('a2'), operationClass: 'remote_command' });
      history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, { actor: 'service:authorization' });
      history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: 'd1' }, dispatcher);
      history.run(executionId, { type: 'RecordUnknownOutcome', now: at(30), attempt: 1, reason: 'ssh_connection_dropped' }, dispatcher);
      history.run(executionId, { type: 'RecordMarkerProbe', now: at(40), attempt: 1, marker: 'probe_failed', exitStatus: null, failure: mismatch }, dispatcher);
      history.run(executionId, { type: 'RequireReview', now: at(41), reason: 'marker_probe_failed' }, dispatcher);
      const inv = investigate(history.events, { executionId });

      expect(inv.answers.outcome.summary).toBe(
        `no: attempt 1: outcome unknown (ssh_connection_dropped) at ${at(30)}; marker probe failed: ${mismatch}; review marker_probe_failed pending`,
      );
      expect(inv.timeline.find((entry) => entry.type === 'MarkerProbed')!.detail).toBe(`attempt 1: marker probe failed: ${mismatch}`);
    });
  });

  describe('given an idempotent call whose first dispatcher was lost mid-attempt, sent again by another dispatcher', () => {
    const history = new RecordedHistory();
    const executionId = executionIdOf('J');
    const first = 'dispatcher-http@host-a/serve/101-0a1b2c3d';
    const second = 'dispatcher-http@host-b/serve/202-4e5f6a7b';
    history.accept(executionId, { fingerprint: fingerprintOf('c3'), operationClass: 'idempotent_write' });
    history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, { actor: 'service:authorization' });
    const [firstDispatch] = history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: first }, { actor: 'service:dispatcher-http' });
    history.run(executionId, { type: 'RecordUnknownOutcome', now: at(15_000), attempt: 1, reason: 'dispatcher_lost' }, { actor: 'service:dispatcher-http' });
    const [secondDispatch] = history.run(executionId, { type: 'RecordDispatch', now: at(15_010), dispatcherId: second }, { actor: 'service:dispatcher-http' });
    history.run(
      executionId,
      { type: 'ObserveOutcome', now: at(15_200), attempt: 2, outcome: 'succeeded', source: 'response', targetStatus: 200, exitCode: null, resultRef: null, resultDigest: null },
      { actor: 'service:dispatcher-http' },
    );
    const inv = investigate(history.events, { executionId });

    it('then each attempt names the dispatcher instance that ran it in a field of its own', () => {
      expect(inv.executions[0]!.attempts).toEqual([
        { attempt: 1, dispatcherId: first, dispatchedAt: at(20), position: firstDispatch!.position },
        { attempt: 2, dispatcherId: second, dispatchedAt: at(15_010), position: secondDispatch!.position },
      ]);
      // As `oncegate investigate --json` prints it.
      expect(JSON.parse(JSON.stringify(inv)).executions[0].attempts.map((attempt: { dispatcherId: string }) => attempt.dispatcherId)).toEqual([first, second]);
    });

    it('then the text gives each attempt a line labelling its dispatcher, under its execution', () => {
      const lines = formatInvestigation(inv).split('\n');
      const execution = lines.findIndex((line) => line.startsWith(`  ${executionId}  `));
      expect(lines.slice(execution + 1, execution + 3)).toEqual([
        `    attempt 1  dispatcher: ${first}  dispatched ${at(20)}  #${firstDispatch!.position}`,
        `    attempt 2  dispatcher: ${second}  dispatched ${at(15_010)}  #${secondDispatch!.position}`,
      ]);
    });

    it('then an execution never dispatched has no attempt, and no attempt line', () => {
      const undispatched = new RecordedHistory();
      const id = executionIdOf('K');
      undispatched.accept(id, { fingerprint: fingerprintOf('c4') });
      const found = investigate(undispatched.events, { executionId: id });
      expect(found.executions[0]!.attempts).toEqual([]);
      expect(formatInvestigation(found)).not.toMatch(/^ {4}attempt /m);
    });
  });

  describe('given a first call answered "still in progress" and a retry given the result', () => {
    const { history, executionId, first, retry } = inProgressThenRetry();
    const inv = investigate(history.events, { executionId });
    const positionOf = (type: string, nth = 0) => history.events.filter((event) => event.type === type)[nth]!.position;

    it('then (6) lists each call with what it was told and what is known of its delivery', () => {
      expect(inv.answers.told.question).toBe('Was the agent told, and what?');
      expect(inv.answers.told.facts.executions).toEqual([
        {
          executionId,
          calls: [
            {
              call: 'first',
              correlation: first,
              at: inv.executions[0]!.acceptedAt,
              position: positionOf('ExecutionAccepted'),
              answers: [
                {
                  event: 'AnswerGiven',
                  told: { state: 'dispatched', isError: false, attempts: 1, attached: false, replayed: false, givenAt: at(1_000) },
                  delivery: 'delivered',
                  evidence: 'a later tools/list message on the same MCP session, received after the response was written',
                  reason: null,
                  at: at(1_100),
                  position: positionOf('AnswerGiven'),
                },
              ],
            },
            {
              call: 'retry',
              correlation: retry,
              at: at(4_000),
              position: positionOf('RetryAttached'),
              answers: [
                expect.objectContaining({
                  event: 'AnswerGiven',
                  told: expect.objectContaining({ state: 'completed', attached: true }),
                  delivery: 'unproven',
                  reason: 'the MCP session closed before anything proved receipt',
                }),
              ],
            },
          ],
          otherAnswers: [],
        },
      ]);
      expect(inv.answers.told.evidence).toEqual(
        [positionOf('ExecutionAccepted'), positionOf('AnswerGiven'), positionOf('RetryAttached'), positionOf('AnswerGiven', 1)].sort((a, b) => a - b),
      );
    });

    it('then (6) says it in one line per call, and the text shows it as the sixth answer', () => {
      expect(inv.answers.told.summary).toBe(
        `first call [rpc=2 session=session-w transport=streamable-http]: told dispatched (1 attempt) at ${at(1_000)}; delivered ` +
          '(a later tools/list message on the same MCP session, received after the response was written); ' +
          `retry [rpc=4 session=session-w transport=streamable-http]: told completed (1 attempt, attached) at ${at(4_010)}; delivery unproven ` +
          '(the MCP session closed before anything proved receipt)',
      );
      const text = formatInvestigation(inv);
      expect(text).toContain('  6. Was the agent told, and what?\n     first call [rpc=2');
      expect(text).toMatch(/AnswerGiven {2}service:result-delivery {2}\[rpc=2 session=session-w transport=streamable-http\] {2}told dispatched \(1 attempt\) at .*; delivered \(a later tools\/list/);
    });

    it('then the five answers before it stay as they were: an answer given moves nothing', () => {
      expect(inv.executions[0]!.status).toBe('completed');
      expect(inv.answers.delivery.summary).toBe('no delivery recorded');
      expect(inv.answers.processes.facts.calls).toBe(2);
    });
  });

  describe('given a dropped connection, then a retry given the stored result (the answers recorded as results)', () => {
    const { history, executionId } = droppedConnectionThenAttach();
    const told = investigate(history.events, { executionId }).answers.told;

    it('then (6) shows the first result not delivered and the retry delivered, from ResultDeliveryFailed and ResultDelivered', () => {
      const [call, again] = told.facts.executions[0]!.calls;
      expect(call!.answers).toEqual([
        expect.objectContaining({ event: 'ResultDeliveryFailed', delivery: 'not_delivered', reason: 'response stream closed before write', told: expect.objectContaining({ state: 'completed' }) }),
      ]);
      expect(again!.answers).toEqual([
        expect.objectContaining({ event: 'ResultDelivered', delivery: 'delivered', told: expect.objectContaining({ state: 'completed_result_not_delivered', attached: true }) }),
      ]);
    });
  });

  describe('given journals written before answers were recorded', () => {
    const history = new RecordedHistory();
    const executionId = executionIdOf('R');
    const correlation = { jsonRpcId: 5, sessionId: 'session-old', transport: 'streamable-http' };
    history.accept(executionId, { fingerprint: fingerprintOf('a9'), correlation });
    history.run(executionId, { type: 'AuthorizeExecution', now: at(10), basis: 'policy' }, { actor: 'service:authorization' });
    history.run(executionId, { type: 'RecordDispatch', now: at(20), dispatcherId: 'd1' }, { actor: 'service:dispatcher-http' });
    history.run(
      executionId,
      { type: 'ObserveOutcome', now: at(30), attempt: 1, outcome: 'succeeded', source: 'response', targetStatus: 200, exitCode: null, resultRef: null, resultDigest: null },
      { actor: 'service:dispatcher-http' },
    );
    // What result delivery records when nobody waits: it answered no call.
    history.run(executionId, { type: 'RecordResultDeliveryFailed', now: at(40), correlation: {}, reason: 'no caller was waiting on an open transport when the outcome arrived' }, { actor: 'service:result-delivery' });
    history.run(executionId, { type: 'AttachRetry', now: at(50), correlation: { ...correlation, jsonRpcId: 6 } }, { actor: 'agent:deploy-bot' });
    history.run(executionId, { type: 'RecordResultDelivered', now: at(60), correlation: { ...correlation, jsonRpcId: 6 }, replayed: false, evidence: 'a later message' }, { actor: 'service:result-delivery' });
    const inv = investigate(history.events, { executionId });

    it('then (6) names the delivered result without what it told, skips the failure nobody was answered with, and says the first call has no answer recorded', () => {
      expect(inv.answers.told.summary).toBe(
        'first call [rpc=5 session=session-old transport=streamable-http]: no answer recorded (still waiting, cancelled, or its delivery not settled yet); ' +
          'retry [rpc=6 session=session-old transport=streamable-http]: given a result (what it told was not recorded then); delivered (a later message)',
      );
      expect(inv.answers.told.facts.executions[0]!.otherAnswers).toEqual([]);
      expect(inv.timeline.find((entry) => entry.type === 'ResultDelivered')!.detail).toBe('delivered');
    });
  });

  describe('given a task whose result a tasks/get handed out', () => {
    const history = new RecordedHistory();
    const executionId = executionIdOf('S');
    const call = { jsonRpcId: 1, transport: 'streamable-http' };
    const poll = { jsonRpcId: 2, transport: 'streamable-http' };
    history.accept(executionId, { fingerprint: fingerprintOf('a8'), correlation: call });
    answer(history, executionId, at(5), call, { state: 'accepted', attempts: 0, via: 'task' }, { kind: 'unproven', reason: 'written in full; on the 2026-07-28 revision no later request can show that it was read' });
    history.run(executionId, { type: 'DenyExecution', now: at(10), basis: 'policy', reason: 'not on Fridays' }, { actor: 'service:authorization' });
    answer(history, executionId, at(20), poll, { state: 'denied', isError: true, attempts: 0, via: 'task_result' }, { kind: 'unproven' });
    const told = investigate(history.events, { executionId }).answers.told;

    it('then (6) shows the call answered with a task, and the task result as an answer to the tasks/get that carried it', () => {
      expect(told.facts.executions[0]!.calls[0]!.answers).toEqual([expect.objectContaining({ told: expect.objectContaining({ state: 'accepted', via: 'task' }) })]);
      expect(told.facts.executions[0]!.otherAnswers).toEqual([expect.objectContaining({ correlation: poll, told: expect.objectContaining({ state: 'denied', isError: true, via: 'task_result' }) })]);
      expect(told.summary).toContain(`an answer to [rpc=2 transport=streamable-http]: told denied (0 attempts, an error, as the task's result) at ${at(15)}; delivery unproven`);
    });
  });

  it('given nothing recorded, then it is not found and the text says so', () => {
    const inv = investigate([], { executionId: executionIdOf('G') });
    expect(inv.found).toBe(false);
    expect(formatInvestigation(inv)).toBe(`Nothing is recorded for execution ${executionIdOf('G')}.\n`);
  });

  it('formats the timeline and the six answers as text', () => {
    const { history, executionId } = droppedConnectionThenAttach();
    const text = formatInvestigation(investigate(history.events, { executionId }));
    expect(text).toContain(`Investigation of execution ${executionId}`);
    expect(text).toContain('ResultDeliveryFailed');
    expect(text).toMatch(/ {2}1\. One process or two\?\n {5}one: /);
    expect(text).toMatch(/ {2}5\. Did the second call attach.*\n.*\n {5}evidence: #\d+/);
  });

  it('parses an execution id or a fingerprint, and refuses anything else', () => {
    expect(parseInvestigationSubject(executionIdOf('H'))).toEqual({ executionId: executionIdOf('H') });
    expect(parseInvestigationSubject(fingerprintOf('ab'))).toEqual({ fingerprint: fingerprintOf('ab') });
    expect(() => parseInvestigationSubject('42')).toThrow(InvalidInvestigationSubjectError);
  });
});
