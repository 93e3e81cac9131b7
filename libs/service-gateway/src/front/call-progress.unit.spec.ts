import { describe, expect, it } from 'vitest';
import { evolve, initialState, type ExecutionState } from '@oncegate/domain';
import { acceptExecution, authorize, dispatch, given, progressed, requestApproval, unknownOutcome } from '@oncegate/domain/testing';
import { progressMessage, progressReporter } from './call-progress';

describe('progress while a call waits', () => {
  it('given each state a call waits in, then the message says the step, and who decides and until when for an approval', () => {
    const approval = given(acceptExecution({ operationClass: 'irreversible' }), requestApproval());
    expect(progressMessage(approval)).toMatch(/^execution ex_\w+: awaiting approval by a person with the approver role \(asked by .+\); (denied unless decided by \d{4}-|no deadline)/);
    expect(progressMessage(given(acceptExecution()))).toMatch(/accepted, being authorized/);
    expect(progressMessage(given(acceptExecution(), authorize()))).toMatch(/authorized, about to be sent/);
    expect(progressMessage(given(acceptExecution(), authorize(), dispatch()))).toMatch(/dispatched \(attempt 1\), awaiting the target's answer/);
    const checks = {
      idempotent_write: /sent again with the same idempotency key/,
      conditional_write: /running the contract's status query/,
      irreversible: /held for a person to review; never sent again/,
      remote_command: /probing the durable marker/,
    } as const;
    for (const [operationClass, check] of Object.entries(checks)) {
      const unknown = given(acceptExecution({ operationClass: operationClass as keyof typeof checks }), authorize(), dispatch(), unknownOutcome());
      expect(progressMessage(unknown)).toMatch(/outcome of attempt 1 unknown, checking/);
      expect(progressMessage(unknown)).toMatch(check);
    }
    expect(progressMessage(initialState())).toBeUndefined();
  });

  it('given the target reports progress of the attempt in flight, then each report is told with its numbers and words, and a report of an earlier attempt is not', () => {
    const sent: string[] = [];
    const report = progressReporter(7, async (notification) => void sent.push(String(notification.params['message'])));
    report(given(acceptExecution(), authorize(), dispatch()));
    report(given(acceptExecution(), authorize(), dispatch(), progressed(2, { total: 5, message: 'copying files' })));
    report(given(acceptExecution(), authorize(), dispatch(), progressed(2, { total: 5, message: 'copying files' })));
    report(given(acceptExecution(), authorize(), dispatch(), progressed(3)));
    expect(sent).toEqual([
      expect.stringMatching(/dispatched \(attempt 1\), awaiting the target's answer$/),
      expect.stringMatching(/dispatched \(attempt 1\), the target reports 2 of 5: copying files$/),
      expect.stringMatching(/dispatched \(attempt 1\), the target reports 3$/),
    ]);
    const earlier = { ...given(acceptExecution(), authorize(), dispatch(), progressed(4)), attempts: 2 };
    expect(progressMessage(earlier)).toMatch(/dispatched \(attempt 2\), awaiting the target's answer$/);
  });

  it('given the same state seen twice, then it is told once, and the steps are counted up', async () => {
    const sent: Array<Record<string, unknown>> = [];
    const report = progressReporter('tok-1', async (notification) => void sent.push(notification.params));
    const accepted: ExecutionState = given(acceptExecution());
    report(accepted);
    report(accepted);
    report(evolve(accepted, { type: 'ExecutionAuthorized', schemaVersion: 1, data: { basis: 'policy', authorizedAt: '2026-12-01T10:00:00.000Z' } } as never));
    expect(sent.map((params) => [params['progressToken'], params['progress']])).toEqual([
      ['tok-1', 1],
      ['tok-1', 2],
    ]);
  });
});
