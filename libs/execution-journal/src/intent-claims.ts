import { hash } from 'node:crypto';
import {
  decide,
  executionStream,
  idempotencyKeyStream,
  initialState,
  intentStream,
  type ExecutionCommand,
  type ExecutionId,
  type Fingerprint,
  type IdempotencyKeyClaim,
  type IsoInstant,
} from '@oncegate/domain';
import { newEventId, WrongExpectedRevisionError, type AppendManyEntry, type EventStore } from '@oncegate/event-store';
import { isoNow, type Clock } from './clock';
import { rememberAppended, type AppendContext, type CommandOutcome } from './execution-journal';
import { chainSteps, tellCommitted, type InlineStep } from './inline-steps';

/**
 * Claims make "two identical calls racing end as one execution" hold (docs/design.md section 5): the first call to
 * append to `intent-<fingerprint>` with the revision it read owns the intent; a loser re-reads and attaches.
 */
export interface IntentClaim {
  readonly executionId: ExecutionId;
  readonly fingerprint: Fingerprint;
  readonly claimedAt: IsoInstant;
}

/** Data of an `IdempotencyKeyClaimed` event: the claim of a caller's idempotency key (never the key itself). */
export interface IdempotencyKeyClaimedData extends IdempotencyKeyClaim {
  readonly claimedAt: IsoInstant;
}

export interface ReadClaim<TClaim> {
  /** The latest claim, if any. */
  readonly claim: TClaim | undefined;
  /** The claim stream's last revision, for the next claim's expected revision. */
  readonly revision: number | undefined;
}

async function readLatest<TClaim>(store: EventStore, stream: string): Promise<ReadClaim<TClaim>> {
  const [latest] = await store.readStream(stream, { direction: 'backwards', maxCount: 1 });
  return { claim: latest?.data as TClaim | undefined, revision: latest?.revision };
}

/** A claim as one entry of a batch, expecting the claim stream's revision the claimer read. */
function claimEntry(
  stream: string,
  type: string,
  data: object,
  expectedRevision: number | undefined,
  actor: string,
  clock: Clock,
): AppendManyEntry {
  const eventId = newEventId();
  return {
    streamId: stream,
    events: [{ id: eventId, type, data, metadata: { eventId, actor, recordedAt: isoNow(clock), schemaVersion: 1 } }],
    expectedRevision: expectedRevision ?? 'no_stream',
  };
}

export function readIntentClaim(store: EventStore, fingerprint: Fingerprint): Promise<ReadClaim<IntentClaim>> {
  return readLatest<IntentClaim>(store, intentStream(fingerprint));
}

/** The `IntentClaimed` entry of a {@link startClaimedExecution} batch. */
export function intentClaimEntry(claim: IntentClaim, expectedRevision: number | undefined, actor: string, clock: Clock): AppendManyEntry {
  return claimEntry(intentStream(claim.fingerprint), 'IntentClaimed', claim, expectedRevision, actor, clock);
}

/** The key never appears in a stream name; a digest of actor, tool and key does. */
function keyStream(actor: string, tool: string, key: string): string {
  const digest = hash('sha256', `${actor}\u0000${tool}\u0000${key}`, 'hex');
  return idempotencyKeyStream(actor, tool, digest);
}

export function readIdempotencyKeyClaim(
  store: EventStore,
  actor: string,
  tool: string,
  key: string,
): Promise<ReadClaim<IdempotencyKeyClaim>> {
  return readLatest<IdempotencyKeyClaim>(store, keyStream(actor, tool, key));
}

/** The `IdempotencyKeyClaimed` entry of a {@link startClaimedExecution} batch. */
export function idempotencyKeyClaimEntry(
  key: string,
  claim: IdempotencyKeyClaim,
  expectedRevision: number | undefined,
  clock: Clock,
): AppendManyEntry {
  const data: IdempotencyKeyClaimedData = { ...claim, claimedAt: isoNow(clock) };
  return claimEntry(
    keyStream(claim.actor, claim.tool, key),
    'IdempotencyKeyClaimed',
    data,
    expectedRevision,
    claim.actor,
    clock,
  );
}

/**
 * Claims an intent and starts its execution in one commit (docs/design.md section 5): the claim entries and the
 * events `command` decides on the new, empty `execution-<id>` stream are appended with `appendMany`, so a claim is
 * never seen without its execution. With `steps` (the services of this process that run inline), the steps that
 * can follow at once are decided before that commit and committed with it — accept, authorize and dispatch in one
 * append — and told the committed state afterwards. `undefined` when another writer took a claim stream (or the
 * execution stream) first: nothing was written, and the caller reads the claims again and decides again.
 */
export async function startClaimedExecution(
  store: EventStore,
  executionId: ExecutionId,
  command: ExecutionCommand,
  claims: readonly AppendManyEntry[],
  context: AppendContext,
  clock: Clock,
  steps: readonly InlineStep[] = [],
): Promise<CommandOutcome | undefined> {
  const chained = await chainSteps(executionId, { state: initialState(), events: decide(command, initialState()), context }, steps, clock);
  try {
    const results = await store.appendMany([
      ...claims,
      { streamId: executionStream(executionId), events: chained.toAppend, expectedRevision: 'no_stream' },
    ]);
    const started = results.at(-1)!;
    // The new stream as stored extends nothing: it is the whole fold, so the call's first wait reads nothing back.
    rememberAppended(store, { executionId, state: chained.state, revision: started.nextExpectedRevision, events: started.events });
    tellCommitted(chained);
    return { state: chained.state, revision: started.nextExpectedRevision, appended: chained.events };
  } catch (error) {
    if (error instanceof WrongExpectedRevisionError) return undefined;
    throw error;
  }
}
