import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@oncegate/event-store';
import { oncegate } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient, connectModernClient, connectStdioClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario } from '../support/scenario';

/** What the stream says a call was told, and what is known of that answer's delivery. */
interface AnswerData {
  readonly correlation: { readonly jsonRpcId?: string | number; readonly sessionId?: string; readonly transport?: string };
  readonly told: { readonly state: string; readonly isError: boolean; readonly attempts: number; readonly attached: boolean; readonly replayed: boolean; readonly via?: string };
  readonly delivery?: string;
  readonly evidence?: string;
  readonly reason?: string;
}

/** The investigation's sixth answer, as `oncegate investigate --json` prints it. */
interface ToldReport {
  readonly answers: {
    readonly told: {
      readonly question: string;
      readonly facts: {
        readonly executions: ReadonlyArray<{
          readonly calls: ReadonlyArray<{ readonly call: string; readonly answers: ReadonlyArray<{ readonly told: AnswerData['told'] | null; readonly delivery: string }> }>;
        }>;
      };
    };
  };
}

describe('gateway end to end: every answer a call is given is in its stream, with what it told and its delivery', () => {
  // Short enough that a held target makes the call answer "still in progress"; long enough for a payment's 1.5 s timeout.
  const scenario = gatewayScenario({ call_wait: '3s' });

  const streamOf = (executionId: string) => readJournal(scenario.folder.dataDir, [`execution-${executionId}`]);
  /** The events that record an answer: AnswerGiven, and a result's delivery that carries what it told. */
  const answersIn = (events: readonly RecordedEvent[]) =>
    events.filter((event) => event.type === 'AnswerGiven' || (event.data as { told?: unknown }).told !== undefined);
  const answersOf = (executionId: string, count: number) =>
    eventually(async () => {
      const answers = answersIn(await streamOf(executionId));
      return answers.length >= count ? answers : undefined;
    }, 15_000, `${count} answers recorded`);
  const acceptedCorrelation = async (executionId: string) =>
    ((await streamOf(executionId)).find((event) => event.type === 'ExecutionAccepted')!.data as AnswerData).correlation;

  it('given a write the target holds past call_wait, when the agent is told "still in progress", acknowledges it, then calls again and gets the result, then both answers are in the stream and investigate shows them per call', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const args = { name: 'told.slow', value: 'v1' };
    const first = await client.callTool({ name: 'set_config', arguments: args });
    const executionId = executionOf(first).id;
    expect(executionOf(first)).toMatchObject({ state: 'dispatched', attached: false });
    expect(first.isError).toBe(false);
    // Written, not yet acknowledged: nothing is recorded for the answer until its delivery settles.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answersIn(await streamOf(executionId))).toEqual([]);
    await client.listTools();

    await scenario.target.control('release', { match: 'PUT /config/:name' });
    await eventually(async () => ((await streamOf(executionId)).some((event) => event.type === 'OutcomeObserved') ? true : undefined));
    const retried = await client.callTool({ name: 'set_config', arguments: args });
    expect(executionOf(retried)).toMatchObject({ id: executionId, attached: true });
    await client.listTools();
    await client.close();

    const [told, result] = await answersOf(executionId, 2);
    expect(told!.type).toBe('AnswerGiven');
    expect(told!.data).toMatchObject({
      correlation: await acceptedCorrelation(executionId),
      told: { state: 'dispatched', isError: false, attempts: 1, attached: false, replayed: false },
      delivery: 'delivered',
      evidence: expect.stringMatching(/^a later tools\/list message on the same MCP session/),
    });
    // The result answer is the delivery of the result itself: one event, which moves the execution to delivered.
    expect(result!.type).toBe('ResultDelivered');
    expect(result!.data).toMatchObject({
      told: { state: executionOf(retried).state, isError: false, attempts: 1, attached: true, replayed: false },
      evidence: expect.stringMatching(/tools\/list/),
    });
    expect((await scenario.target.effects()).requestsTotal).toBe(1);

    const investigated = await oncegate(scenario.folder, ['investigate', executionId, '--json']);
    expect(investigated.code, investigated.stderr).toBe(0);
    const calls = (JSON.parse(investigated.stdout) as ToldReport).answers.told.facts.executions[0]!.calls;
    expect(calls.map((call) => [call.call, call.answers.map((answer) => [answer.told?.state, answer.delivery])])).toEqual([
      ['first', [['dispatched', 'delivered']]],
      ['retry', [[executionOf(retried).state, 'delivered']]],
    ]);
    const text = await oncegate(scenario.folder, ['investigate', executionId]);
    expect(text.stdout).toMatch(/ {2}6\. Was the agent told, and what\?\n {5}first call \[rpc=\S+ session=\S+ transport=streamable-http\]: told dispatched \(1 attempt\)/);
  });

  it('given an irreversible payment whose outcome is unknown, when the agent is told so (unknown, held for review) and closes its session at once, then that answer is recorded as unproven', async () => {
    await scenario.target.control('hold', { match: 'POST /payments' });
    const { client, transport } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const held = await client.callTool({ name: 'send_payment', arguments: { payment_reference: 'told-review-0001', amount_cents: 900, card_token: 'tok_told_000001' } });
    const executionId = executionOf(held).id;
    // The answer comes with the unknown outcome, or with the review hold recorded right after it.
    const state = executionOf(held).state;
    expect(['outcome_unknown', 'needs_review']).toContain(state);
    expect(held.isError).toBe(false);
    await transport.terminateSession();
    await client.close();

    const [answer] = await answersOf(executionId, 1);
    expect(answer!.type).toBe('AnswerGiven');
    expect(answer!.data).toMatchObject({
      correlation: await acceptedCorrelation(executionId),
      told: { state, isError: false, attempts: 1, attached: false },
      delivery: 'unproven',
      reason: 'the MCP session closed before anything proved receipt',
    });
    // Nothing proves the answer arrived, so nothing says it did.
    expect((await streamOf(executionId)).map((event) => event.type)).not.toContain('ResultDelivered');
    const text = await oncegate(scenario.folder, ['investigate', executionId]);
    expect(text.stdout).toContain(`told ${state} (1 attempt) at`);
    expect(text.stdout).toContain('delivery unproven (the MCP session closed before anything proved receipt)');
  });

  it('given a payout waiting for approval, when the agent is told so, the approval is denied and it calls again, then both answers are recorded: the wait unproven (a repeat proves nothing), the denial an error, delivered', async () => {
    const payout = { payment_reference: 'told-denied-0001', amount_cents: 700 };
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const waiting = await client.callTool({ name: 'send_payout', arguments: payout });
    const executionId = executionOf(waiting).id;
    expect(executionOf(waiting).state).toBe('awaiting_approval');
    const denied = await oncegate(scenario.folder, ['approvals', 'deny', executionId, '--reason', 'no invoice on file', '--by', 'user:bob']);
    expect(denied.code, denied.stderr).toBe(0);
    await eventually(async () => ((await streamOf(executionId)).some((event) => event.type === 'ExecutionDenied') ? true : undefined));
    const again = await client.callTool({ name: 'send_payout', arguments: payout });
    expect(executionOf(again)).toMatchObject({ id: executionId, attached: true, state: 'denied' });
    expect(again.isError).toBe(true);
    await client.listTools();
    await client.close();

    const answers = await answersOf(executionId, 2);
    expect(answers.map((event) => event.data as AnswerData)).toEqual([
      expect.objectContaining({
        told: expect.objectContaining({ state: 'awaiting_approval', isError: false, attempts: 0, attached: false }),
        delivery: 'unproven',
        reason: 'the same call came again on the same MCP session, which proves nothing either way',
      }),
      expect.objectContaining({
        told: expect.objectContaining({ state: 'denied', isError: true, attempts: 0, attached: true }),
        delivery: 'delivered',
        evidence: expect.stringMatching(/tools\/list/),
      }),
    ]);
    expect(answers.every((event) => event.type === 'AnswerGiven')).toBe(true);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given a call over stdio and one on the 2026-07-28 revision, when each connection ends after its answer, then each answer is recorded with its transport and why its delivery stays unproven', async () => {
    const stdio = await connectStdioClient(scenario.folder, scenario.gateway.devToken);
    const overStdio = executionOf(await stdio.callTool({ name: 'set_config', arguments: { name: 'told.stdio', value: 'v1' } }));
    await stdio.close();
    const modern = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken);
    const overModern = executionOf(await modern.callTool({ name: 'set_config', arguments: { name: 'told.modern', value: 'v1' } }));
    await modern.close();

    const [fromStdio] = await answersOf(overStdio.id, 1);
    expect(fromStdio!.data).toMatchObject({
      correlation: { transport: 'stdio' },
      told: { state: overStdio.state, isError: false, attempts: 1 },
      delivery: 'unproven',
      reason: 'the stdio connection closed before anything proved receipt',
    });
    const [fromModern] = await answersOf(overModern.id, 1);
    expect(fromModern!.data).toMatchObject({
      correlation: await acceptedCorrelation(overModern.id),
      told: { state: overModern.state, isError: false, attempts: 1 },
      delivery: 'unproven',
      reason: 'written in full; on the 2026-07-28 revision no later request can show that it was read',
    });
  });
});
