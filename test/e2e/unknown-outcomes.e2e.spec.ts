import { describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { gatewayScenario, executionOf, textOf } from '../support/scenario';


const payment = { payment_reference: 'order-20261130-0001', amount_cents: 1250, card_token: 'tok_canary_5f1e9a' };

describe('gateway end to end: unknown outcomes are told, and an irreversible one is held for review', () => {
  const scenario = gatewayScenario();

  it('given a target that times out after receiving the body, when the agent calls and retries an irreversible tool, then it is told the outcome is unknown, held for review, and nothing is re-sent', async () => {
    await scenario.target.control('hang', { match: 'POST /payments' });
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const first = await client.callTool({ name: 'send_payment', arguments: payment });
    expect(first.isError).toBe(false);
    // The unknown outcome is answered at once; review may already hold it by then.
    expect(['outcome_unknown', 'needs_review']).toContain(executionOf(first).state);
    expect(textOf(first)).toMatch(/Outcome unknown|Held for review/);
    expect(textOf(first)).toMatch(/re-sent|will not send it again/);

    const retry = await client.callTool({ name: 'send_payment', arguments: payment });
    await client.close();
    expect(executionOf(retry)).toMatchObject({ id: executionOf(first).id, attached: true, state: 'needs_review', attempts: 1 });
    expect(textOf(retry)).toMatch(/Held for review \(irreversible_outcome_unknown\)/);
    expect(retry.isError).toBe(false);
    expect((await scenario.target.effects()).byEndpoint['POST /payments']).toBe(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    const steps = async () => (await executionEvents(scenario.folder.dataDir, executionOf(first).id)).filter((type) => type !== 'AnswerGiven');
    expect(await steps()).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeUnknown', 'ReviewRequired', 'RetryAttached']);
    // The first answer is recorded once its delivery settled (whether anything proved it was received depends on the
    // transport's evidence); the retry's own answer settles when its session ends, and the client only let go of it.
    const [told] = await eventually(async () => {
      const answers = (await readJournal(scenario.folder.dataDir, [`execution-${executionOf(first).id}`])).filter((event) => event.type === 'AnswerGiven');
      return answers.length >= 1 ? answers : undefined;
    }, 10_000, 'the first answer recorded');
    expect(told!.data).toMatchObject({ told: { state: executionOf(first).state, attached: false } });
    expect(['delivered', 'unproven']).toContain((told!.data as { delivery: string }).delivery);
  });

  it('given kill -9 between Dispatched and OutcomeObserved, when the gateway restarts, then the irreversible call is held for review and a retry sends nothing', async () => {
    await scenario.target.control('hold', { match: 'POST /payments' });
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    void client.callTool({ name: 'send_payment', arguments: payment }).catch(() => undefined);
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the payment to arrive');
    const [executionId] = await executionIds(scenario.folder.dataDir);
    expect(await executionEvents(scenario.folder.dataDir, executionId!)).toContain('Dispatched');
    await scenario.gateway.kill();
    await client.close().catch(() => undefined);
    await scenario.target.control('release', { match: 'POST /payments' });

    scenario.gateway = await startGatewayProcess(scenario.folder);
    const again = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retry = await again.client.callTool({ name: 'send_payment', arguments: payment });
    await again.client.close();

    expect(executionOf(retry)).toMatchObject({ id: executionId, attached: true, state: 'needs_review', attempts: 1 });
    expect(textOf(retry)).toMatch(/Held for review/);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    const events = await executionEvents(scenario.folder.dataDir, executionId!);
    expect(events.slice(0, 5)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeUnknown', 'ReviewRequired']);
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
  });

  it('given kill -9 between Dispatched and OutcomeObserved, when the gateway restarts and the idempotent write is retried, then it is re-dispatched with the same Idempotency-Key', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const args = { name: 'replicas', value: '5' };
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    void client.callTool({ name: 'set_config', arguments: args }).catch(() => undefined);
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    const [executionId] = await executionIds(scenario.folder.dataDir);
    await scenario.gateway.kill();
    await client.close().catch(() => undefined);
    await scenario.target.control('release', { match: 'PUT /config/:name' });

    scenario.gateway = await startGatewayProcess(scenario.folder);
    const again = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retry = await again.client.callTool({ name: 'set_config', arguments: args });
    await again.client.close();

    expect(executionOf(retry)).toMatchObject({ id: executionId, attached: true, attempts: 2 });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(retry).state);
    expect(retry.isError).toBe(false);
    const effects = await scenario.target.effects();
    expect(effects.requests.map((r) => r.idempotencyKey)).toEqual([executionId, executionId]);
    expect(effects.total).toBe(1);
    const events = await executionEvents(scenario.folder.dataDir, executionId!);
    expect(events.slice(0, 7)).toEqual([
      'ExecutionAccepted',
      'ExecutionAuthorized',
      'Dispatched',
      'OutcomeUnknown',
      'RetryAttached',
      'Dispatched',
      'OutcomeObserved',
    ]);
  });
});
