import { describe, expect, it } from 'vitest';
import type { ExecutionCommand, OperationClass } from '@oncegate/domain';
import { acceptExecution, at, attachRetry, authorize, dispatch, given, observe, requireReview, resolveReview, WINDOW_MS } from '@oncegate/domain/testing';
import { headline, toolResult, type StoredResult } from './tool-results';

/** What one attempt came to, per status family; a remote command's families are exit statuses. */
type Family = '2xx' | '4xx' | '5xx' | '502/504' | 'not sent';

const HTTP_STATUS: Readonly<Record<'2xx' | '4xx' | '5xx', number>> = { '2xx': 201, '4xx': 409, '5xx': 500 };
const EXIT_STATUS: Readonly<Record<'2xx' | '4xx' | '5xx', number>> = { '2xx': 0, '4xx': 1, '5xx': 70 };

function outcomeOf(operationClass: OperationClass, family: Family): ExecutionCommand[] {
  const remote = operationClass === 'remote_command';
  switch (family) {
    case '2xx':
    case '4xx':
    case '5xx': {
      const outcome = family === '2xx' ? 'succeeded' : 'failed';
      return [
        remote
          ? observe({ outcome, targetStatus: null, exitCode: EXIT_STATUS[family] })
          : observe({ outcome, targetStatus: HTTP_STATUS[family] }),
      ];
    }
    case '502/504': {
      // An intermediary's 502/504 (HTTP) or a dropped connection (SSH): the channel records the outcome unknown.
      const lost: ExecutionCommand = {
        type: 'RecordUnknownOutcome',
        executionId: acceptExecution().executionId,
        now: at(500),
        attempt: 1,
        reason: remote ? 'ssh_connection_dropped' : 'timeout_after_send',
      };
      return operationClass === 'irreversible' ? [lost, requireReview()] : [lost];
    }
    case 'not sent':
      return [
        observe({
          outcome: 'failed',
          source: 'not_sent',
          targetStatus: null,
          resultRef: null,
          resultDigest: null,
          notSentReason: remote ? 'host key mismatch: 10.0.0.5:22 presented another key' : 'connect ECONNREFUSED 127.0.0.1:8790',
        }),
      ];
  }
}

function told(operationClass: OperationClass, family: Family) {
  const state = given(acceptExecution({ operationClass, redeliveryGraceMs: operationClass === 'read_only' ? 0 : null }), authorize(), dispatch(), ...outcomeOf(operationClass, family));
  return { state, ...headline(state, 'the_tool', undefined) };
}

const HARM: readonly OperationClass[] = ['conditional_write', 'irreversible', 'remote_command'];
const CLASSES: readonly OperationClass[] = ['read_only', 'idempotent_write', ...HARM];
const WINDOW_END = at(WINDOW_MS);

describe('what the agent is told, per operation class and status family', () => {
  for (const operationClass of CLASSES) {
    const harms = HARM.includes(operationClass);
    describe(`given a ${operationClass} call`, () => {
      it('when the target answers 2xx (exit 0) then it is completed, not an error', () => {
        const { state, text, isError } = told(operationClass, '2xx');
        expect(state.status).toBe('completed');
        expect(isError).toBe(false);
        expect(text).toMatch(/^the_tool completed/);
        expect(text).not.toMatch(/error|may have acted|nothing was sent/i);
      });

      for (const family of ['4xx', '5xx'] as const) {
        it(`when the target answers ${family} (a non-zero exit) then it is completed with an error answer, never "nothing was sent"`, () => {
          const { state, text, isError } = told(operationClass, family);
          expect(state.status).toBe('completed');
          expect(isError).toBe(true);
          const answered = operationClass === 'remote_command' ? `the command exited with status ${EXIT_STATUS[family]}` : `the target answered ${HTTP_STATUS[family]}`;
          expect(text).toContain(`the_tool completed with an error answer: ${answered}.`);
          expect(text).not.toMatch(/nothing was sent|failed|nothing was retried/i);
          if (harms) {
            expect(text).toContain('The target may have acted: it answered with an error, and an error answer does not prove that nothing happened');
            expect(text).toContain(`is matched to this execution until its correlation window ends at ${WINDOW_END} and gets this same answer back: it is not sent again.`);
          } else {
            expect(text).not.toMatch(/may have acted|not sent again/);
          }
        });
      }

      it('when the answer is 502/504 (a dropped connection) then the outcome is unknown, never a failure', () => {
        const { state, text, isError } = told(operationClass, '502/504');
        const held = operationClass === 'irreversible';
        expect(state.status).toBe(held ? 'needs_review' : 'outcome_unknown');
        expect(isError).toBe(false);
        expect(text).toMatch(held ? /^Held for review \(irreversible_outcome_unknown\): the outcome of the_tool is not known/ : /^Outcome unknown: the request to the_tool may have reached the target/);
        expect(text).not.toMatch(/nothing was sent|completed/i);
      });

      it('when nothing was sent then it failed, and the sentence says nothing was sent and why', () => {
        const { state, text, isError } = told(operationClass, 'not sent');
        expect(state.status).toBe('failed');
        expect(isError).toBe(true);
        expect(text).toMatch(/^the_tool failed: nothing was sent \((connect ECONNREFUSED|host key mismatch)[^)]*\); nothing reached the target\./);
        expect(text).toContain(`returns this failure until its correlation window ends at ${WINDOW_END}; to try again, call with _meta["io.oncegate/new-intent"]: true.`);
        expect(text).not.toMatch(/may have acted|completed/);
      });
    });
  }
});

describe('the rest of an answer about an error answer', () => {
  it('given an irreversible call answered 500 after the effect, then structuredContent says completed with the status and an error answer, and the body follows the sentence', () => {
    const state = given(acceptExecution({ operationClass: 'irreversible', redeliveryGraceMs: null }), authorize(), dispatch(), observe({ outcome: 'failed', targetStatus: 500 }));
    const body: StoredResult = { status: 500, exitCode: null, contentType: 'application/json', body: '{"error":"upstream"}', encoding: 'utf8', truncated: false };
    const result = toolResult('send_payment', state, { attached: false, replayed: false }, body);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      execution: { state: 'completed', targetStatus: 500, errorAnswer: true, attempts: 1 },
      response: { error: 'upstream' },
    });
    expect((result.content[0] as { text: string }).text).toMatch(/^send_payment completed with an error answer: the target answered 500\. .+\n\n\{"error":"upstream"\}$/s);
  });

  it('given a caller idempotency key, then the retry the sentence describes is the call with the same key', () => {
    const state = given(
      acceptExecution({
        operationClass: 'irreversible',
        redeliveryGraceMs: null,
        correlationWindowMs: null,
        intentScope: { kind: 'key', key: 'order-7', source: 'caller' },
        record: { ...acceptExecution().record, intent_scope: 'key:order-7' },
      }),
      authorize(),
      dispatch(),
      observe({ outcome: 'failed', targetStatus: 422 }),
    );
    const { text } = headline(state, 'send_payment', undefined);
    // A window "until confirmed" never ends: the match holds with no end to name.
    expect(text).toContain('Calling again with the same arguments and idempotency key is matched to this execution and gets this same answer back: it is not sent again.');
  });
});

describe('what the agent is told after a review found its call not executed', () => {
  const lost: ExecutionCommand = { type: 'RecordUnknownOutcome', executionId: acceptExecution().executionId, now: at(500), attempt: 1, reason: 'timeout_after_send' };
  const held = [acceptExecution({ operationClass: 'irreversible', redeliveryGraceMs: null }), authorize(), dispatch(), lost, requireReview()];

  it('given the resolution alone, then it says an operator found it not executed, nothing was sent since, and that calling again sends it', () => {
    const { text, isError } = headline(given(...held, resolveReview('not_executed')), 'send_payment', undefined);
    expect(isError).toBe(false);
    expect(text).toBe(
      `An operator found that send_payment was not executed (user:operator, at ${at(800)}); nothing has been sent since. ` +
        `Execution ${acceptExecution().executionId}: call again with the same arguments in the same run to send it — it goes out as attempt 2 ` +
        'under the same execution id and idempotency key.',
    );
  });

  it('given a resend asked for an irreversible call, then it also says the resend waits for a second operator', () => {
    const { text } = headline(given(...held, resolveReview('not_executed', { resend: true, by: 'user:alice' })), 'send_payment', undefined);
    expect(text).toMatch(/ user:alice asked to send it again; that waits for a second operator to confirm it\.$/);
  });

  it('given the agent called again, then the call is in progress again: attempt 2 is about to be sent', () => {
    const state = given(...held, resolveReview('not_executed'), attachRetry(at(900)));
    expect(state.status).toBe('authorized');
    expect(headline(state, 'send_payment', undefined).text).toMatch(/^send_payment is still in progress \(authorized\)/);
  });
});

