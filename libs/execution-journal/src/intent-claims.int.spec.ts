import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionIdFromUlid, executionStream, type ExecutionCommand, type ExecutionId, type Fingerprint } from '@oncegate/domain';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the real SQLite adapter
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, systemClock } from './clock';
import { cachedHolding } from './execution-journal';
import {
  idempotencyKeyClaimEntry,
  intentClaimEntry,
  readIdempotencyKeyClaim,
  readIntentClaim,
  startClaimedExecution,
} from './intent-claims';
import { newUlid } from './ulid';

const fingerprint = `hmac-sha256:k1:${'cd'.repeat(32)}` as Fingerprint;

function accept(executionId: ExecutionId): ExecutionCommand {
  return {
    type: 'AcceptExecution',
    executionId,
    now: isoNow(systemClock),
    record: { actor: 'agent:test', tool: 'send_payment', channel: 'http', target: 'test/payments', credential_ref: null, method: 'POST', arguments: {}, intent_scope: 'key:k-1' } as never,
    fingerprint,
    operationClass: 'irreversible',
    intentScope: { kind: 'key', key: 'k-1', source: 'caller' },
    correlationWindowMs: 60_000,
    redeliveryGraceMs: 60_000,
    attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 5_000, markerBeforeWork: false },
    correlation: { jsonRpcId: 1, transport: 'streamable-http' },
    argumentsRef: 'sealed_arguments_1',
  } as ExecutionCommand;
}

describe('startClaimedExecution (SQLite store)', () => {
  let dir: string;
  let store: SqliteEventStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-claims-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function start(executionId: ExecutionId, intentRevision: number | undefined, keyRevision: number | undefined) {
    const claimedAt = isoNow(systemClock);
    return startClaimedExecution(
      store,
      executionId,
      accept(executionId),
      [
        intentClaimEntry({ executionId, fingerprint, claimedAt }, intentRevision, 'agent:test', systemClock),
        idempotencyKeyClaimEntry('k-1', { executionId, fingerprint, actor: 'agent:test', tool: 'send_payment' }, keyRevision, systemClock),
      ],
      { actor: 'agent:test' },
      systemClock,
    );
  }

  it('given a fresh intent, when its execution starts, then both claims and ExecutionAccepted commit together at consecutive positions', async () => {
    const executionId = executionIdFromUlid(newUlid());
    const outcome = await start(executionId, undefined, undefined);
    expect(outcome?.state.status).toBe('accepted');
    expect(outcome?.revision).toBe(0);
    expect((await readIntentClaim(store, fingerprint)).claim?.executionId).toBe(executionId);
    expect((await readIdempotencyKeyClaim(store, 'agent:test', 'send_payment', 'k-1')).claim?.executionId).toBe(executionId);
    const { events } = await store.readAll();
    expect(events.map((event) => `${event.position}:${event.type}`)).toEqual(['1:IntentClaimed', '2:IdempotencyKeyClaimed', '3:ExecutionAccepted']);
    expect(events[2]!.streamId).toBe(executionStream(executionId));
    // The process that started it keeps the new stream's fold, the event as stored: its caller's wait reads nothing.
    const kept = cachedHolding(store, executionId, { streamId: executionStream(executionId), revision: 0 });
    expect(kept?.state).toEqual(outcome?.state);
    expect(kept?.events).toEqual([events[2]]);
  });

  it('given the key claimed by another call in between, when the execution starts, then neither its intent claim nor its execution is written', async () => {
    const other = executionIdFromUlid(newUlid());
    expect(await store.appendMany([idempotencyKeyClaimEntry('k-1', { executionId: other, fingerprint, actor: 'agent:test', tool: 'send_payment' }, undefined, systemClock)])).toHaveLength(1);
    const executionId = executionIdFromUlid(newUlid());
    expect(await start(executionId, undefined, undefined)).toBeUndefined();
    expect((await readIntentClaim(store, fingerprint)).claim).toBeUndefined();
    expect(await store.streamRevision(executionStream(executionId))).toBeUndefined();
    expect(await store.headPosition()).toBe(1);
  });

  it('given identical calls racing with the same read, when they start at once, then exactly one execution exists and its claim names it', async () => {
    const ids = Array.from({ length: 8 }, () => executionIdFromUlid(newUlid()));
    const outcomes = await Promise.all(ids.map((executionId) => start(executionId, undefined, undefined)));
    const started = ids.filter((_, i) => outcomes[i] !== undefined);
    expect(started).toHaveLength(1);
    for (const executionId of ids) {
      expect(await store.streamRevision(executionStream(executionId))).toBe(executionId === started[0] ? 0 : undefined);
    }
    expect((await readIntentClaim(store, fingerprint)).claim?.executionId).toBe(started[0]);
  });
});
