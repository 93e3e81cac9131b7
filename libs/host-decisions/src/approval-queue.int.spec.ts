import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionIdFromUlid, executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { newUlid } from '@oncegate/execution-journal';
import {
  CARD_TOKEN_HMAC,
  acceptedPayment,
  ManualClock,
  command,
  deniedOnTimeout,
  paymentAwaitingApproval,
  retryAttached,
  approvalTools,
} from './testing/approval-fixtures';
import {
  ApprovalNotFoundError,
  ApprovalNotPendingError,
  InvalidApprovalDecisionError,
  decide,
  pending,
  show,
} from './approval-queue';

const MINUTE = 60_000;

describe('the approval queue (SQLite event store)', () => {
  let dir: string;
  let store: EventStore;
  let clock: ManualClock;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-approvals-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock();
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const typesOf = async (id: ExecutionId) => (await store.readStream(executionStream(id))).map((event) => event.type);

  it('given pending, decided and timed-out requests, when the queue is listed, then only the pending ones come, oldest first', async () => {
    const first = await paymentAwaitingApproval(store, clock, { reference: 'pay-first' });
    clock.advance(MINUTE);
    const granted = await paymentAwaitingApproval(store, clock);
    clock.advance(MINUTE);
    const timedOut = await paymentAwaitingApproval(store, clock, { expiresInMs: MINUTE });
    clock.advance(MINUTE);
    const second = await paymentAwaitingApproval(store, clock, { reference: 'pay-second', scope: 'run' });
    await decide(store, clock, granted, 'approve', 'user:alice', 'within budget');
    await deniedOnTimeout(store, clock, timedOut);
    // A retry of the first call later in time does not move it back in the queue.
    clock.advance(MINUTE);
    await retryAttached(store, clock, first, 2);

    const queue = await pending(store, clock);

    expect(queue.map((item) => item.executionId)).toEqual([first, second]);
    expect(queue[0]).toMatchObject({
      actor: 'agent:billing-bot',
      tool: 'send_payment',
      runId: 'run-7f3a',
      scope: 'execution',
      requestedBy: 'policy:payments-over-limit',
      reason: 'payments over 1000.00 need a person',
      expiresAt: null,
      retriesAttached: 1,
    });
    expect(queue[1]!.scope).toBe('run');
  });

  it('given a request with two retries attached, when shown, then it is one request listing both calls, with target, redacted arguments and what granting does', async () => {
    const id = await paymentAwaitingApproval(store, clock, { scope: 'run', expiresInMs: 15 * MINUTE });
    clock.advance(1_000);
    await retryAttached(store, clock, id, 2);
    clock.advance(1_000);
    await retryAttached(store, clock, id, 3);

    const view = await show(store, id, { tools: approvalTools('https://payments.example'), clock });

    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'RetryAttached', 'RetryAttached']);
    expect(view).toMatchObject({
      executionId: id,
      state: 'awaiting_approval',
      summary: 'pending',
      actor: 'agent:billing-bot',
      runId: 'run-7f3a',
      tool: 'send_payment',
      channel: 'http',
      operationClass: 'irreversible',
      intentScope: 'run:run-7f3a',
      target: { name: 'demo/payments', method: 'POST', url: 'https://payments.example/payments', sshHost: null, inContract: true },
      arguments: { payment_reference: 'pay-000123', amount_cents: 125_000, card_token: CARD_TOKEN_HMAC },
      approval: {
        scope: 'run',
        requestedBy: 'policy:payments-over-limit',
        requestedAt: '2026-07-22T10:00:00.000Z',
        expiresAt: '2026-07-22T10:15:00.000Z',
        decision: 'pending',
        decidedBy: null,
      },
    });
    expect(view.fingerprint).toMatch(/^hmac-sha256:k1:[0-9a-f]{64}$/);
    expect(view.approval.grants).toBe(
      'Approving grants run run-7f3a of agent:billing-bot a session grant for send_payment: this call, the run\'s other calls of send_payment waiting for it, and every later call of send_payment in that run are authorized without asking again, until the run ends.',
    );
    expect(view.attachedCalls).toEqual([
      { correlation: { jsonRpcId: 2, sessionId: 'session-2', transport: 'streamable-http' }, returned: 'pending', attachedAt: '2026-07-22T10:00:01.000Z' },
      { correlation: { jsonRpcId: 3, sessionId: 'session-3', transport: 'streamable-http' }, returned: 'pending', attachedAt: '2026-07-22T10:00:02.000Z' },
    ]);
    expect(view.record.tool).toBe('send_payment');
  });

  it('given an execution-scoped request and no contracts, when shown, then granting is said to approve this one execution and the recorded target stands alone', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const view = await show(store, id);
    expect(view.approval.grants).toBe(`Approving lets this one execution (${id}) proceed; nothing else is approved.`);
    expect(view.target).toEqual({ name: 'demo/payments', method: 'POST', url: null, sshHost: null, argv: null, inContract: false });
  });

  it('given a pending request, when approved, then exactly one ApprovalGranted is appended with who and why', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    clock.advance(MINUTE);

    const view = await decide(store, clock, id, 'approve', 'user:alice', '  invoice 4411 checked  ');

    const events = await store.readStream(executionStream(id));
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalGranted']);
    expect(events[2]!.data).toEqual({ by: 'user:alice', reason: 'invoice 4411 checked', decidedAt: '2026-07-22T10:01:00.000Z' });
    expect(events[2]!.metadata['actor']).toBe('user:alice');
    expect(view.approval).toMatchObject({ decision: 'granted', decidedBy: 'user:alice', decisionReason: 'invoice 4411 checked' });
    expect(view.summary).toBe('granted by user:alice at 2026-07-22T10:01:00.000Z');
  });

  it('given a pending request, when denied, then exactly one ApprovalDenied is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const view = await decide(store, clock, id, 'deny', 'user:bob', 'card looks stolen');
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalDenied']);
    expect(view.approval).toMatchObject({ decision: 'denied', decidedBy: 'user:bob', decisionReason: 'card looks stolen' });
  });

  it('given a granted request, when decided again either way, then it is refused naming who granted it and nothing is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    await decide(store, clock, id, 'approve', 'user:alice', 'ok');
    clock.advance(MINUTE);

    for (const decision of ['approve', 'deny'] as const) {
      const refused = await decide(store, clock, id, decision, 'user:bob', 'me too').catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ApprovalNotPendingError);
      expect((refused as ApprovalNotPendingError).kind).toBe('not_pending');
      expect((refused as Error).message).toBe(`execution ${id} is not awaiting approval: already granted by user:alice at 2026-07-22T10:00:00.000Z`);
    }
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalGranted']);
  });

  it('given a request granted and then authorized, when approved again, then the refusal names the grant and the state it moved on to', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    await decide(store, clock, id, 'approve', 'user:alice', 'ok');
    await command(store, clock, id, (now) => ({ type: 'AuthorizeExecution', executionId: id, now, basis: 'per_use_approval' }));
    await expect(decide(store, clock, id, 'approve', 'user:alice', 'again')).rejects.toThrow(
      /not awaiting approval: already granted by user:alice at \S+; the execution is now authorized$/,
    );
  });

  it('given a request denied on timeout, when approved, then it is refused with the timeout and nothing is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock, { expiresInMs: 5 * MINUTE });
    clock.advance(5 * MINUTE);
    await deniedOnTimeout(store, clock, id);
    clock.advance(MINUTE);

    const refused = await decide(store, clock, id, 'approve', 'user:alice', 'sorry, late').catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(ApprovalNotPendingError);
    expect((refused as ApprovalNotPendingError).status).toBe('denied');
    expect((refused as Error).message).toBe(
      `execution ${id} is not awaiting approval: already denied: approval_timeout at 2026-07-22T10:05:00.000Z (nobody decided before the request expired)`,
    );
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ExecutionDenied']);
    expect((await show(store, id, { clock })).approval.decision).toBe('closed');
  });

  it('given a request past its expiry that authorization has not denied yet, when approved, then it is refused as expired', async () => {
    const id = await paymentAwaitingApproval(store, clock, { expiresInMs: MINUTE });
    clock.advance(MINUTE);
    await expect(decide(store, clock, id, 'approve', 'user:alice', 'just in time?')).rejects.toThrow(
      'not awaiting approval: the request expired at 2026-07-22T10:01:00.000Z; it is being denied (approval_timeout)',
    );
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);
    expect(await pending(store, clock)).toEqual([]);
  });

  it('given an approve and a deny racing, when both run, then exactly one decision is appended and the other is refused', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const results = await Promise.allSettled([
      decide(store, clock, id, 'approve', 'user:alice', 'yes'),
      decide(store, clock, id, 'deny', 'user:bob', 'no'),
    ]);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((result) => result.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(ApprovalNotPendingError);
    const types = await typesOf(id);
    expect(types.filter((type) => type === 'ApprovalGranted' || type === 'ApprovalDenied')).toHaveLength(1);
  });

  it('given an unknown execution, an execution never asked about, or a bad reason, when shown or decided, then each is a typed refusal', async () => {
    const unknown = executionIdFromUlid(newUlid());
    await expect(show(store, unknown)).rejects.toThrow(new ApprovalNotFoundError(unknown, 'initial'));
    await expect(decide(store, clock, unknown, 'approve', 'user:alice', 'ok')).rejects.toThrow(`no execution ${unknown} in this journal`);

    const id = await paymentAwaitingApproval(store, clock);
    await expect(decide(store, clock, id, 'approve', 'user:alice', '   ')).rejects.toBeInstanceOf(InvalidApprovalDecisionError);
    await expect(decide(store, clock, id, 'approve', 'user:alice', 'x'.repeat(1001))).rejects.toThrow('reason: at most 1000 characters (got 1001)');
    await expect(decide(store, clock, id, 'approve', ' ', 'ok')).rejects.toThrow('by: say who decides');
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);

    const authorized = await acceptedPayment(store, clock);
    await command(store, clock, authorized, (now) => ({ type: 'AuthorizeExecution', executionId: authorized, now, basis: 'policy' }));
    await expect(show(store, authorized)).rejects.toThrow(`execution ${authorized} has no approval request (state: authorized)`);
    await expect(decide(store, clock, authorized, 'deny', 'user:alice', 'no')).rejects.toThrow(
      `execution ${authorized} is not awaiting approval: no approval was requested (state: authorized)`,
    );
  });
});
