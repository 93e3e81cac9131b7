import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionIdFromUlid, executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { newUlid } from '@oncegate/execution-journal';
import { acceptedPayment, approvalTools, command, ManualClock, paymentAwaitingApproval } from '@oncegate/host-decisions/testing';
import { ApproverDirectory } from '@oncegate/host-principals';
import type { Kafka } from 'kafkajs';
import type { BusProducer } from './bus-client';
import { BusDecisions } from './bus-decisions';
import { signDecision } from './decision-signature';
import DECISION_SCHEMA from './decision.schema.json' with { type: 'json' };

/** Decisions as they come off the bus, applied to a real store (the Kafka side is covered by the relay's e2e test). */
describe('decisions taken from the bus (SQLite event store)', () => {
  let dir: string;
  let store: EventStore;
  let clock: ManualClock;
  let decisions: BusDecisions;
  let approvers: ApproverDirectory;
  /** The same store and approvers, with `kafka.decisions.require_signature: true`. */
  let signedOnly: BusDecisions;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-bus-decisions-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock();
    approvers = new ApproverDirectory(store);
    await approvers.issue('alice');
    await approvers.issue('mallory');
    await approvers.revoke('mallory');
    const consumer = (requireSignature: boolean) =>
      new BusDecisions({
        kafka: {} as Kafka,
        producer: {} as BusProducer,
        config: { topic: 'oncegate.decisions', replies: 'oncegate.decision-outcomes', group: 'g', requireSignature },
        source: 'oncegate-test',
        store,
        approvers,
        tools: approvalTools('http://127.0.0.1:9'),
        clock,
        logger: new Logger('test'),
      });
    decisions = consumer(false);
    signedOnly = consumer(true);
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const message = (body: unknown) => Buffer.from(JSON.stringify(body));
  const approve = (executionId: string, by = 'approver:alice', id = 'd-1') => message({ kind: 'approval', id, execution_id: executionId, decision: 'approve', by, reason: 'checked the invoice' });
  const decided = async (id: ExecutionId) => (await store.readStream(executionStream(id))).filter((event) => event.type === 'ApprovalGranted' || event.type === 'ApprovalDenied');

  it('given a pending approval, when an approver approves it on the bus, then one ApprovalGranted is recorded by that approver and the reply says applied', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const reply = await decisions.apply(approve(id), 'oncegate.decisions/0/7');
    expect(reply).toMatchObject({ in_reply_to: 'd-1', kind: 'approval', execution_id: id, outcome: 'applied', refusal: null, state: 'awaiting_approval' });
    expect(reply.message).toMatch(/^approval granted by approver:alice at /);
    const events = await decided(id);
    expect(events.map((event) => [event.type, (event.data as { by: string }).by, event.metadata['actor']])).toEqual([['ApprovalGranted', 'approver:alice', 'approver:alice']]);
  });

  it('given a decision already recorded, when a second one (or the same one delivered again) arrives, then it is refused naming the first and nothing is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    await decisions.apply(approve(id), 'p/0/1');
    const again = await decisions.apply(approve(id, 'approver:alice', 'd-2'), 'p/0/2');
    expect(again).toMatchObject({ in_reply_to: 'd-2', outcome: 'refused', refusal: 'not_pending' });
    expect(again.message).toMatch(/already granted by approver:alice/);
    const deny = await decisions.apply(message({ kind: 'approval', execution_id: id, decision: 'deny', by: 'approver:alice', reason: 'no' }), 'p/0/3');
    expect(deny).toMatchObject({ in_reply_to: 'p/0/3', outcome: 'refused', refusal: 'not_pending' });
    expect(await decided(id)).toHaveLength(1);
  });

  it('given an approver who does not exist or whose tokens are revoked, when they decide, then it is refused and nothing is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    for (const by of ['approver:eve', 'approver:mallory']) {
      const reply = await decisions.apply(approve(id, by), 'p/0/1');
      expect(reply).toMatchObject({ outcome: 'refused', refusal: 'unknown_approver', execution_id: id });
      expect(reply.message).toContain(`${by} is not an approver of this journal`);
    }
    expect(await decided(id)).toEqual([]);
  });

  it.each([
    ['empty', Buffer.alloc(0), /an empty message/],
    ['not JSON', Buffer.from('{"kind": "approval",'), /^not JSON/],
    ['an agent as decider', message({ kind: 'approval', execution_id: 'ex_01JZ0000000000000000000000', decision: 'approve', by: 'agent:dev', reason: 'x' }), /not a decision .*\/by/],
    ['an unknown field', message({ kind: 'approval', execution_id: 'x', decision: 'approve', by: 'approver:alice', reason: 'x', extra: 1 }), /not a decision/],
    ['a decision that is neither', message({ kind: 'approval', execution_id: 'x', decision: 'maybe', by: 'approver:alice', reason: 'x' }), /not a decision/],
    ['a bad execution id', message({ kind: 'approval', execution_id: "x' OR 1=1", decision: 'approve', by: 'approver:alice', reason: 'x' }), /is not an execution id/],
    ['too large', Buffer.alloc(70_000, 0x20), /at most 65536 bytes/],
  ])('given a message that is %s, when taken, then it is refused as malformed with the reason and nothing is appended', async (_name, value, reason) => {
    const head = await store.headPosition();
    const reply = await decisions.apply(value, 'oncegate.decisions/2/40');
    expect(reply).toMatchObject({ outcome: 'refused', refusal: 'malformed' });
    expect(reply.message).toMatch(reason);
    expect(await store.headPosition()).toBe(head);
  });

  it('given an execution that does not exist, when approved, then it is refused as not found', async () => {
    const id = executionIdFromUlid(newUlid());
    expect(await decisions.apply(approve(id), 'p/0/1')).toMatchObject({ outcome: 'refused', refusal: 'not_found', state: null });
  });

  it('given an execution not held for review, when a review resolution arrives, then it is refused as not held', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const reply = await decisions.apply(message({ kind: 'review', execution_id: id, resolution: 'completed', by: 'approver:alice', reason: 'seen it' }), 'p/0/1');
    expect(reply).toMatchObject({ kind: 'review', outcome: 'refused', refusal: 'not_held', state: 'awaiting_approval' });
  });

  it('given a payment held for review, when an approver resolves it on the bus, then one ReviewResolved is recorded and a second resolution is refused', async () => {
    const id = await acceptedPayment(store, clock);
    await command(store, clock, id, (now) => ({ type: 'AuthorizeExecution', executionId: id, now, basis: 'policy' }));
    await command(store, clock, id, (now) => ({ type: 'RecordDispatch', executionId: id, now, dispatcherId: 'dispatcher-http@test' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RecordUnknownOutcome', executionId: id, now, attempt: 1, reason: 'timeout_after_send' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RequireReview', executionId: id, now, reason: 'irreversible_outcome_unknown' }), 'service:dispatcher-http');
    const resolve = (id2: string) => message({ kind: 'review', id: id2, execution_id: id, resolution: 'not_executed', by: 'approver:alice', reason: 'the provider shows no charge' });
    expect(await decisions.apply(resolve('r-1'), 'p/0/1')).toMatchObject({ in_reply_to: 'r-1', kind: 'review', outcome: 'applied', refusal: null });
    const again = await decisions.apply(resolve('r-2'), 'p/0/2');
    expect(again).toMatchObject({ in_reply_to: 'r-2', outcome: 'refused', refusal: 'not_held' });
    expect(again.message).toMatch(/already resolved as not_executed by approver:alice/);
    const resolved = (await store.readStream(executionStream(id))).filter((event) => event.type === 'ReviewResolved');
    expect(resolved.map((event) => event.metadata['actor'])).toEqual(['approver:alice']);
  });

  it('given an irreversible payment held for review, when one approver resolves it not_executed with resend on the bus, then nothing is authorized until a second approver sends the same, and the first one twice is refused', async () => {
    await approvers.issue('bob');
    const id = await acceptedPayment(store, clock);
    await command(store, clock, id, (now) => ({ type: 'AuthorizeExecution', executionId: id, now, basis: 'policy' }));
    await command(store, clock, id, (now) => ({ type: 'RecordDispatch', executionId: id, now, dispatcherId: 'dispatcher-http@test' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RecordUnknownOutcome', executionId: id, now, attempt: 1, reason: 'timeout_after_send' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RequireReview', executionId: id, now, reason: 'irreversible_outcome_unknown' }), 'service:dispatcher-http');
    const resend = (by: string, decisionId: string) =>
      message({ kind: 'review', id: decisionId, execution_id: id, resolution: 'not_executed', resend: true, by, reason: 'the provider shows no charge' });

    expect(await decisions.apply(resend('approver:alice', 'r-1'), 'p/0/1')).toMatchObject({ outcome: 'applied', state: 'not_executed' });
    const again = await decisions.apply(resend('approver:alice', 'r-2'), 'p/0/2');
    expect(again).toMatchObject({ outcome: 'refused', refusal: 'invalid_resolution' });
    expect(again.message).toMatch(/needs a second operator/);
    expect(await decisions.apply(resend('approver:bob', 'r-3'), 'p/0/3')).toMatchObject({ outcome: 'applied', state: 'authorized' });
    const resolved = (await store.readStream(executionStream(id))).filter((event) => event.type === 'ReviewResolved');
    expect(resolved.map((event) => event.metadata['actor'])).toEqual(['approver:alice', 'approver:bob']);
  });

  it('given a resend with a resolution other than not_executed, then it is refused and nothing is appended', async () => {
    const id = await acceptedPayment(store, clock);
    const head = await store.headPosition();
    const reply = await decisions.apply(message({ kind: 'review', execution_id: id, resolution: 'completed', resend: true, by: 'approver:alice', reason: 'x' }), 'p/0/1');
    expect(reply).toMatchObject({ outcome: 'refused', refusal: 'invalid_resolution' });
    expect(await store.headPosition()).toBe(head);
  });

  describe("signed by the approver's own key", () => {
    let aliceKey: KeyObject;
    let bobKey: KeyObject;

    beforeEach(async () => {
      await approvers.issue('bob');
      const alice = generateKeyPairSync('ed25519');
      const bob = generateKeyPairSync('ed25519');
      aliceKey = alice.privateKey;
      bobKey = bob.privateKey;
      await approvers.addKey('alice', alice.publicKey);
      await approvers.addKey('bob', bob.publicKey);
    });

    const approval = (executionId: string, by = 'approver:alice') => ({ kind: 'approval', id: 'd-1', execution_id: executionId, decision: 'approve', by, reason: 'checked the invoice' });
    const signed = (decision: Record<string, unknown>, key: KeyObject) => message(signDecision(decision, key));

    it('given a decision signed with the key of the approver it names, when signatures are required, then it is applied and the reply names the key', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      const reply = await signedOnly.apply(signed(approval(id), aliceKey), 'p/0/1');
      expect(reply).toMatchObject({ outcome: 'applied', refusal: null });
      const [key] = await approvers.signingKeys('approver:alice');
      expect(reply.message).toMatch(new RegExp(`^approval granted by approver:alice at \\S+ \\(signed with key ${key!.keyId.slice(0, 16)}\\)$`));
      expect((await decided(id)).map((event) => event.metadata['actor'])).toEqual(['approver:alice']);
    });

    it('given a signed decision written with its fields in another order and with spaces, then it verifies: the signature is over the canonical JSON', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      const { signature } = signDecision(approval(id), aliceKey) as { signature: string };
      const rewritten = `{ "signature": "${signature}", "reason": "checked the invoice", "by": "approver:alice", "decision": "approve", "execution_id": "${id}", "id": "d-1", "kind": "approval" }`;
      expect(await signedOnly.apply(Buffer.from(rewritten), 'p/0/1')).toMatchObject({ outcome: 'applied' });
    });

    it('given an unsigned decision, when signatures are required, then it is refused as bad_signature saying so and nothing is appended; without the option it is applied', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      const head = await store.headPosition();
      const refused = await signedOnly.apply(message(approval(id)), 'p/0/1');
      expect(refused).toMatchObject({ in_reply_to: 'd-1', execution_id: id, outcome: 'refused', refusal: 'bad_signature' });
      expect(refused.message).toMatch(/^the decision carries no signature and kafka\.decisions\.require_signature is on: sign the RFC 8785 canonical JSON/);
      expect(await store.headPosition()).toBe(head);
      expect(await decisions.apply(message(approval(id)), 'p/0/2')).toMatchObject({ outcome: 'applied' });
    });

    it("given a decision in alice's name signed with bob's key, then it is refused whether or not signatures are required", async () => {
      const id = await paymentAwaitingApproval(store, clock);
      for (const consumer of [signedOnly, decisions]) {
        const reply = await consumer.apply(signed(approval(id, 'approver:alice'), bobKey), 'p/0/1');
        expect(reply).toMatchObject({ outcome: 'refused', refusal: 'bad_signature' });
        expect(reply.message).toMatch(/^the signature does not verify with the live key of approver:alice: the decision was changed after it was signed, or signed with another key/);
      }
      expect(await decided(id)).toEqual([]);
    });

    it('given a signed decision changed after it was signed (the decision, the execution, the reason, the id), then each is refused and nothing is appended, and the message as signed is applied', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      const other = await paymentAwaitingApproval(store, clock);
      const original = signDecision({ ...approval(id), decision: 'deny' }, aliceKey);
      const head = await store.headPosition();
      for (const change of [{ decision: 'approve' }, { execution_id: other }, { reason: 'checked the invoice.' }, { id: 'd-2' }]) {
        for (const consumer of [signedOnly, decisions]) {
          expect(await consumer.apply(message({ ...original, ...change }), 'p/0/1')).toMatchObject({ outcome: 'refused', refusal: 'bad_signature' });
        }
      }
      expect(await store.headPosition()).toBe(head);
      const untouched = await decisions.apply(message(original), 'p/0/2');
      expect(untouched).toMatchObject({ outcome: 'applied' });
      expect(untouched.message).toMatch(/^approval denied by approver:alice /);
      expect((await decided(id)).map((event) => event.type)).toEqual(['ApprovalDenied']);
    });

    it('given the key that signed revoked, then its decisions are refused as having no live key, and a new key signs again', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      const decision = signed(approval(id), aliceKey);
      expect(await approvers.revokeKeys('alice')).toHaveLength(1);
      for (const consumer of [signedOnly, decisions]) {
        const reply = await consumer.apply(decision, 'p/0/1');
        expect(reply).toMatchObject({ outcome: 'refused', refusal: 'bad_signature' });
        expect(reply.message).toBe('approver:alice has no signing key that is not revoked: oncegate approvers key add alice --public-key <file>');
      }
      const renewed = generateKeyPairSync('ed25519');
      await approvers.addKey('alice', renewed.publicKey);
      expect(await signedOnly.apply(decision, 'p/0/2')).toMatchObject({ outcome: 'refused', refusal: 'bad_signature' });
      expect(await signedOnly.apply(signed(approval(id), renewed.privateKey), 'p/0/3')).toMatchObject({ outcome: 'applied' });
    });

    it('given a signature that is not 64 bytes of base64, then it is refused as bad_signature', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      for (const signature of ['not base64!', Buffer.alloc(63).toString('base64'), Buffer.alloc(64).toString('base64url').slice(0, 86)]) {
        const reply = await decisions.apply(message({ ...approval(id), signature }), 'p/0/1');
        expect(reply).toMatchObject({ outcome: 'refused', refusal: 'bad_signature', message: 'signature is not an Ed25519 signature: 64 bytes in base64 (88 characters)' });
      }
      expect(await decided(id)).toEqual([]);
    });

    it('given a signed decision whose reason holds a lone surrogate escape, then it is refused as malformed: it has no canonical JSON', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      const { signature } = signDecision(approval(id), aliceKey) as { signature: string };
      const text = JSON.stringify({ ...approval(id), signature }).replace('checked the invoice', 'checked \\ud800');
      const reply = await decisions.apply(Buffer.from(text), 'p/0/1');
      expect(reply).toMatchObject({ outcome: 'refused', refusal: 'malformed' });
      expect(reply.message).toMatch(/^the decision has no canonical JSON to check a signature over: /);
      expect(await decided(id)).toEqual([]);
    });

    it('given a signed review resolution with resend from each of two approvers, then both are applied as for unsigned ones, and the same signed message again is refused as a repeat', async () => {
      const id = await acceptedPayment(store, clock);
      await command(store, clock, id, (now) => ({ type: 'AuthorizeExecution', executionId: id, now, basis: 'policy' }));
      await command(store, clock, id, (now) => ({ type: 'RecordDispatch', executionId: id, now, dispatcherId: 'dispatcher-http@test' }), 'service:dispatcher-http');
      await command(store, clock, id, (now) => ({ type: 'RecordUnknownOutcome', executionId: id, now, attempt: 1, reason: 'timeout_after_send' }), 'service:dispatcher-http');
      await command(store, clock, id, (now) => ({ type: 'RequireReview', executionId: id, now, reason: 'irreversible_outcome_unknown' }), 'service:dispatcher-http');
      const resend = (by: string, key: KeyObject) =>
        signed({ kind: 'review', id: `r-${by}`, execution_id: id, resolution: 'not_executed', resend: true, by, reason: 'the provider shows no charge' }, key);
      const alice = resend('approver:alice', aliceKey);
      expect(await signedOnly.apply(alice, 'p/0/1')).toMatchObject({ outcome: 'applied', state: 'not_executed' });
      expect(await signedOnly.apply(alice, 'p/0/2')).toMatchObject({ outcome: 'refused', refusal: 'invalid_resolution' });
      expect(await signedOnly.apply(resend('approver:bob', bobKey), 'p/0/3')).toMatchObject({ outcome: 'applied', state: 'authorized' });
    });
  });

  it('given the schema in docs/events, then it is the one decisions are checked against', () => {
    const documented = JSON.parse(readFileSync(new URL('../../../docs/events/bus-decision.schema.json', import.meta.url), 'utf8')) as unknown;
    expect(documented).toEqual(DECISION_SCHEMA);
  });
});
