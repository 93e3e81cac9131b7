import { describe, expect, it } from 'vitest';
import { oncegate, startGatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario, textOf } from '../support/scenario';

/** Each test loses the outcome after dispatch, then retries; the target's effect count is the verdict. */
describe('gateway end to end: recovery by operation class, and the review queue', () => {
  const scenario = gatewayScenario();

  async function call(name: string, args: Record<string, unknown>) {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    try {
      return await client.callTool({ name, arguments: args });
    } finally {
      await client.close();
    }
  }

  it('given a read that lost its answer, when retried, then it is sent again (a read may repeat)', async () => {
    await scenario.target.control('reset', { match: 'GET /builds/:id', times: 1 });
    const first = await call('get_build', { build_id: '42' });
    expect(executionOf(first).state).toBe('outcome_unknown');
    const retry = await call('get_build', { build_id: '42' });
    expect(executionOf(retry)).toMatchObject({ id: executionOf(first).id, attached: true, attempts: 2 });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(retry).state);
    expect((await scenario.target.effects()).requestsTotal).toBe(2);
  });

  it('given an idempotent write that lost its answer, when retried, then it is sent again with the same key and takes effect once', async () => {
    await scenario.target.control('reset', { match: 'PUT /config/:name', times: 1 });
    const first = await call('set_config', { name: 'pool.size', value: '16' });
    expect(executionOf(first).state).toBe('outcome_unknown');
    const retry = await call('set_config', { name: 'pool.size', value: '16' });
    expect(executionOf(retry)).toMatchObject({ id: executionOf(first).id, attempts: 2 });
    const effects = await scenario.target.effects();
    expect(effects.total).toBe(1);
    expect(effects.requests.map((r) => r.idempotencyKey)).toEqual([executionOf(first).id, executionOf(first).id]);
  });

  it('given a conditional write whose answer was lost before it acted, when retried, then the status query shows the precondition holds and it is sent again', async () => {
    await scenario.target.control('behave', { match: 'PUT /inventory/:sku', action: 'status', status: 504, applyEffect: false, times: 1 });
    const args = { sku: 'SKU-1', quantity: 7, expected_version: 0 };
    const first = await call('update_inventory', args);
    expect(executionOf(first).state).toBe('outcome_unknown');
    const retry = await call('update_inventory', args);
    expect(executionOf(retry)).toMatchObject({ id: executionOf(first).id, attempts: 2 });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(retry).state);
    expect((await scenario.target.effects()).total).toBe(1);
    const events = await executionEvents(scenario.folder.dataDir, executionOf(first).id);
    expect(events).toEqual(expect.arrayContaining(['OutcomeUnknown', 'RetryAttached', 'StatusQueried']));
    expect(events.indexOf('StatusQueried')).toBeLessThan(events.lastIndexOf('Dispatched'));
  });

  it('given a conditional write that acted before its answer was lost, when retried, then the precondition no longer holds and it is held for review', async () => {
    await scenario.target.control('behave', { match: 'PUT /inventory/:sku', action: 'status', status: 504, applyEffect: true, times: 1 });
    const args = { sku: 'SKU-2', quantity: 3, expected_version: 0 };
    const first = await call('update_inventory', args);
    const retry = await call('update_inventory', args);
    expect(executionOf(retry)).toMatchObject({ id: executionOf(first).id, state: 'needs_review', attempts: 1 });
    expect(textOf(retry)).toMatch(/precondition_no_longer_holds/);
    expect((await scenario.target.effects()).total).toBe(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(2); // the write, and one status query
  });

  it('given an irreversible call held for review, when an operator resolves it as not executed, then it is sent again under the same execution id', async () => {
    await scenario.target.control('reset', { match: 'POST /payments', times: 1 });
    const payment = { payment_reference: 'order-review-001', amount_cents: 990, card_token: 'tok_review_000001' };
    const first = await call('send_payment', payment);
    const id = executionOf(first).id;
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, id)).includes('ReviewRequired') ? true : undefined));
    const held = await call('send_payment', payment);
    expect(executionOf(held)).toMatchObject({ id, state: 'needs_review' });
    expect((await scenario.target.effects()).byEndpoint['POST /payments']).toBe(1);

    const listed = await oncegate(scenario.folder, ['review', 'list']);
    expect(listed.stdout).toContain(`${id}\tsend_payment\tagent:dev\tirreversible_outcome_unknown`);
    const shown = await oncegate(scenario.folder, ['review', 'show', id]);
    expect(shown.stdout).toContain('"reason": "irreversible_outcome_unknown"');
    expect(shown.stdout).not.toContain('tok_review_000001');
    const refused = await oncegate(scenario.folder, ['review', 'resolve', id, '--as', 'not-executed']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--reason/);
    const resolved = await oncegate(scenario.folder, [
      'review', 'resolve', id, '--as', 'not-executed', '--reason', 'the processor has no charge for this reference', '--by', 'user:alice',
    ]);
    expect(resolved.code, resolved.stderr).toBe(0);

    // The target charged once already (the reset came after the effect); an operator said otherwise, and is on record.
    await eventually(async () => ((await scenario.target.effects()).byEndpoint['POST /payments'] === 2 ? true : undefined));
    const events = await eventually(async () => {
      const types = await executionEvents(scenario.folder.dataDir, id);
      return types.includes('OutcomeObserved') ? types : undefined;
    });
    expect(events).toEqual(expect.arrayContaining(['ReviewRequired', 'ReviewResolved', 'Dispatched', 'OutcomeObserved']));
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(2);
    const after = await call('send_payment', payment);
    expect(executionOf(after)).toMatchObject({ id, attached: true, attempts: 2 });
    expect((await oncegate(scenario.folder, ['review', 'list'])).stdout).toBe('nothing is held for review\n');
  });

  it('given a restart with executions left in dispatched, when the gateway comes back, then each is recovered by its class', async () => {
    await scenario.target.control('hold', { match: '*' });
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    void client.callTool({ name: 'send_payment', arguments: { payment_reference: 'order-restart-01', amount_cents: 5, card_token: 'tok_restart_0001' } }).catch(() => undefined);
    void client.callTool({ name: 'set_config', arguments: { name: 'restart.flag', value: 'on' } }).catch(() => undefined);
    void client.callTool({ name: 'update_inventory', arguments: { sku: 'SKU-9', quantity: 1, expected_version: 0 } }).catch(() => undefined);
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 3 ? true : undefined), 10_000, 'three requests held');
    await scenario.gateway.kill();
    await client.close().catch(() => undefined);
    await scenario.target.control('release', {});

    scenario.gateway = await startGatewayProcess(scenario.folder);
    const byTool = async () => {
      const ids = await executionIds(scenario.folder.dataDir);
      const entries = await Promise.all(ids.map(async (id) => [id, await executionEvents(scenario.folder.dataDir, id)] as const));
      return entries;
    };
    // Irreversible: held for review at once. Conditional: the status query ran and found the write applied: review.
    // Idempotent: told unknown until the agent retries.
    const settled = await eventually(async () => {
      const entries = await byTool();
      const reviews = entries.filter(([, types]) => types.includes('ReviewRequired')).length;
      return reviews === 2 ? entries : undefined;
    }, 15_000, 'two executions held for review');
    const unknownOnly = settled.filter(([, types]) => types.at(-1) === 'OutcomeUnknown');
    expect(unknownOnly).toHaveLength(1);
    expect(settled.find(([, types]) => types.includes('StatusQueried'))).toBeDefined();
    for (const [, types] of settled) expect(types.filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(4); // three held requests and one status query
  });
});
