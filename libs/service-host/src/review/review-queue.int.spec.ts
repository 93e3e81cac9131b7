import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { acceptedPayment, CARD_TOKEN_HMAC, command, ManualClock } from '../approvals/approval-fixtures';
import { held, InvalidReviewResolutionError, resolveReview, ReviewNotFoundError, ReviewNotHeldError, showReview } from './review-queue';

describe('the review queue (SQLite event store, two connections as two operators)', () => {
  let dir: string;
  let store: EventStore;
  let other: EventStore;
  let clock: ManualClock;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-review-queue-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    other = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock(new Date().toISOString());
  });

  afterEach(async () => {
    await other.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An irreversible payment sent once, whose outcome never came back: held for review. */
  async function heldPayment(): Promise<ExecutionId> {
    const id = await acceptedPayment(store, clock);
    await command(store, clock, id, (now) => ({ type: 'AuthorizeExecution', executionId: id, now, basis: 'policy' }));
    await command(store, clock, id, (now) => ({ type: 'RecordDispatch', executionId: id, now, dispatcherId: 'dispatcher-http@test' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RecordUnknownOutcome', executionId: id, now, attempt: 1, reason: 'timeout_after_send' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RequireReview', executionId: id, now, reason: 'irreversible_outcome_unknown' }), 'service:dispatcher-http');
    return id;
  }

  it('given a held payment, when it is listed and shown, then the reason, the HMAC arguments and every event are there', async () => {
    const id = await heldPayment();
    expect(await held(store)).toEqual([expect.objectContaining({ executionId: id, tool: 'send_payment', reason: 'irreversible_outcome_unknown', attempts: 1 })]);
    const view = await showReview(store, id);
    expect(view).toMatchObject({ state: 'needs_review', review: { reason: 'irreversible_outcome_unknown', resolution: null }, evidence: { markerProbe: null, statusQuery: null } });
    expect(view.record.arguments['card_token']).toBe(CARD_TOKEN_HMAC);
    expect(view.events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeUnknown', 'ReviewRequired']);
  });

  it('given two operators resolving one execution at once, when both append, then one resolution is recorded and the other is told who resolved it', async () => {
    const id = await heldPayment();
    const outcomes = await Promise.allSettled([
      resolveReview(store, clock, id, 'completed', 'approver:alice', 'the processor shows the charge'),
      resolveReview(other, clock, id, 'not_executed', 'approver:bob', 'no charge found'),
    ]);
    const done = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as unknown] : []));
    expect(done).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(ReviewNotHeldError);
    expect((refused[0] as Error).message).toMatch(new RegExp(`${id} is not held for review: already resolved as (completed|not_executed) by approver:(alice|bob) at `));
    const types = (await store.readStream(executionStream(id))).map((event) => event.type);
    expect(types.filter((type) => type === 'ReviewResolved')).toHaveLength(1);
    expect(await held(store)).toEqual([]);
  });

  it('given bad input, when resolving, then it is refused before anything is read or appended', async () => {
    const id = await heldPayment();
    await expect(resolveReview(store, clock, id, 'completed', 'approver:alice', '  ')).rejects.toBeInstanceOf(InvalidReviewResolutionError);
    await expect(resolveReview(store, clock, id, 'maybe' as never, 'approver:alice', 'why')).rejects.toBeInstanceOf(InvalidReviewResolutionError);
    await expect(resolveReview(store, clock, 'ex_01M8NS5GSBB3RVT5JRPSNJB7AB' as ExecutionId, 'completed', 'approver:alice', 'why')).rejects.toBeInstanceOf(ReviewNotFoundError);
    expect((await showReview(store, id)).state).toBe('needs_review');
  });
});
