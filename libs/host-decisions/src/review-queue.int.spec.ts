import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { acceptedPayment, CARD_TOKEN_HMAC, command, ManualClock } from './testing/approval-fixtures';
import { held, InvalidReviewResolutionError, resolutionOutcome, resolveReview, ReviewNotFoundError, ReviewNotHeldError, showReview } from './review-queue';

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

  it('given a held payment resolved as not executed, then nothing is sent on that alone: it waits for the agent, and leaves the queue', async () => {
    const id = await heldPayment();
    const view = await resolveReview(store, clock, id, 'not_executed', 'approver:alice', 'the processor has no charge');
    expect(view).toMatchObject({ state: 'not_executed', attempts: 1, review: { resolution: 'not_executed', resolvedBy: 'approver:alice', resend: null } });
    expect(resolutionOutcome(view)).toBe('nothing is sent until the agent calls again with the same arguments; that call sends attempt 2 under the same execution id');
    expect((await store.readStream(executionStream(id))).map((event) => event.type).slice(-2)).toEqual(['ReviewRequired', 'ReviewResolved']);
    expect(await held(store)).toEqual([]);
    const again = resolveReview(other, clock, id, 'not_executed', 'approver:bob', 'same');
    await expect(again).rejects.toBeInstanceOf(ReviewNotHeldError);
    await expect(again).rejects.toThrow(/already resolved as not_executed by approver:alice at .*; it is sent again when the agent calls again, or on a resend/);
  });

  it('given a held irreversible payment, when one operator asks for a resend, then it waits for a second: the same operator is refused, another confirms it', async () => {
    const id = await heldPayment();
    const asked = await resolveReview(store, clock, id, 'not_executed', 'approver:alice', 'no charge at the processor', { resend: true });
    expect(asked).toMatchObject({ state: 'not_executed', review: { resend: { requestedBy: 'approver:alice', confirmedBy: null } } });
    expect(resolutionOutcome(asked)).toMatch(/^the resend waits for a second operator: another operator resolves .* as not_executed with a resend/);
    expect(await held(store)).toEqual([expect.objectContaining({ executionId: id, resendAskedBy: 'approver:alice' })]);

    const twice = resolveReview(other, clock, id, 'not_executed', 'approver:alice', 'really', { resend: true });
    await expect(twice).rejects.toBeInstanceOf(InvalidReviewResolutionError);
    await expect(twice).rejects.toThrow(
      `by: approver:alice asked to send ${id} again already (at ${asked.review!.resend!.requestedAt}); a resend of an irreversible call needs a second operator: another operator resolves it as not_executed with a resend`,
    );

    const confirmed = await resolveReview(other, clock, id, 'not_executed', 'approver:bob', 'checked the ledger too', { resend: true });
    expect(confirmed).toMatchObject({ state: 'authorized', review: { resolvedBy: 'approver:alice', resend: { requestedBy: 'approver:alice', confirmedBy: 'approver:bob' } } });
    expect(resolutionOutcome(confirmed)).toBe('resend confirmed (asked by approver:alice, confirmed by approver:bob): attempt 2 is sent now under the same execution id');
    expect(await held(store)).toEqual([]);
  });

  it('given a resend that cannot be, then each is refused with why: with another resolution, and once the correlation window ended', async () => {
    const id = await heldPayment();
    await expect(resolveReview(store, clock, id, 'completed', 'approver:alice', 'it went through', { resend: true })).rejects.toThrow(
      'resend: only a not_executed resolution can be sent again, not completed',
    );
    clock.advance(3_600_000);
    await expect(resolveReview(store, clock, id, 'not_executed', 'approver:alice', 'no charge', { resend: true })).rejects.toThrow(
      /^resend: the correlation window of ex_\w+ ended at .*: it can no longer be sent under this execution; resolve without a resend$/,
    );
    expect((await showReview(store, id)).state).toBe('needs_review');
  });
});
