import { describe, expect, it } from 'vitest';
import { oncegate, startGatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { callOnce, connectClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario, textOf } from '../support/scenario';

/** Each test loses the outcome after dispatch, then retries; the target's effect count is the verdict. */
describe('gateway end to end: recovery by operation class, and the review queue', () => {
  const scenario = gatewayScenario();

  const call = (name: string, args: Record<string, unknown>) => callOnce(scenario.gateway, name, args);

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

  /** The execution's event types after its last `ReviewResolved`. */
  async function afterResolution(id: string): Promise<string[]> {
    const types = await executionEvents(scenario.folder.dataDir, id);
    return types.slice(types.lastIndexOf('ReviewResolved') + 1);
  }

  /** Nothing reaches the target for a while: the request count stays where it was. */
  async function quietFor(ms: number, requestsBefore: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    expect((await scenario.target.effects()).requestsTotal).toBe(requestsBefore);
  }

  async function status(id: string) {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    try {
      return await client.callTool({ name: 'execution_status', arguments: { execution_id: id } });
    } finally {
      await client.close();
    }
  }

  async function heldPayment(payment: Record<string, unknown>): Promise<string> {
    await scenario.target.control('reset', { match: 'POST /payments', times: 1 });
    const first = await call('send_payment', payment);
    const id = executionOf(first).id;
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, id)).includes('ReviewRequired') ? true : undefined));
    return id;
  }

  it('given an irreversible call held for review, when an operator resolves it as not executed, then nothing is sent until the agent calls again, and that call sends it once under the same execution id', async () => {
    const payment = { payment_reference: 'order-review-001', amount_cents: 990, card_token: 'tok_review_000001' };
    const id = await heldPayment(payment);
    const held = await call('send_payment', payment);
    expect(executionOf(held)).toMatchObject({ id, state: 'needs_review' });
    expect((await scenario.target.effects()).byEndpoint['POST /payments']).toBe(1);

    const listed = await oncegate(scenario.folder, ['review', 'list']);
    expect(listed.stdout).toContain(`${id}\tsend_payment\tagent:dev\tirreversible_outcome_unknown`);
    const listedJson = JSON.parse((await oncegate(scenario.folder, ['review', 'list', '--json'])).stdout) as unknown[];
    expect(listedJson).toContainEqual(expect.objectContaining({ executionId: id, tool: 'send_payment', actor: 'agent:dev', reason: 'irreversible_outcome_unknown', attempts: 1, resendAskedBy: null }));
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
    expect(resolved.stdout).toBe(`${id} resolved as not-executed by user:alice: nothing is sent until the agent calls again with the same arguments; that call sends attempt 2 under the same execution id\n`);

    // The resolution alone sends nothing: no request reaches the target, and the journal has no attempt after it.
    await quietFor(500, 1);
    expect(await afterResolution(id)).toEqual([]);
    const told = await status(id);
    expect(executionOf(told)).toMatchObject({ id, state: 'not_executed', attempts: 1 });
    expect(told.isError).toBe(false);
    expect(textOf(told)).toMatch(/^An operator found that send_payment was not executed \(user:alice, at \S+\); nothing has been sent since\. Execution ex_\w+: call again with the same arguments to send it — it goes out as attempt 2 under the same execution id and idempotency key\.$/);
    expect((await oncegate(scenario.folder, ['review', 'list'])).stdout).toBe('nothing is held for review\n');

    // The agent's retry sends it, once, under the same execution id. (The target charged the first time already —
    // the reset came after the effect; the operator said otherwise, and is on record.)
    const retry = await call('send_payment', payment);
    expect(executionOf(retry)).toMatchObject({ id, attached: true, attempts: 2 });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(retry).state);
    expect(await afterResolution(id)).toEqual(['RetryAttached', 'Dispatched', 'OutcomeObserved']);
    const effects = await scenario.target.effects();
    expect(effects.requestsTotal).toBe(2);
    expect(effects.requests.map((request) => request.idempotencyKey)).toEqual([id, id]);
  });

  it('given an idempotent write held for review, when an operator resolves it as not executed with --resend, then it is sent once at once, with no retry of the agent', async () => {
    // Every attempt's answer is lost, until recovery reaches the attempt limit and holds it for review.
    await scenario.target.control('reset', { match: 'PUT /config/:name', times: 3 });
    const args = { name: 'resend.flag', value: 'on' };
    const first = await call('set_config', args);
    const id = executionOf(first).id;
    await call('set_config', args);
    await call('set_config', args);
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, id)).includes('ReviewRequired') ? true : undefined));
    expect((await oncegate(scenario.folder, ['review', 'list'])).stdout).toContain(`${id}\tset_config\tagent:dev\tattempt_limit_reached`);
    const before = (await scenario.target.effects()).requestsTotal;
    expect(before).toBe(3);

    const resolved = await oncegate(scenario.folder, [
      'review', 'resolve', id, '--as', 'not-executed', '--resend', '--reason', 'the config service restarted and lost them', '--by', 'user:alice',
    ]);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stdout).toMatch(new RegExp(`^${id} resolved as not-executed with a resend by user:alice: (attempt 4 is sent now|attempt 4 is on its way) under the same execution id\n$`));

    const after = await eventually(async () => {
      const types = await afterResolution(id);
      return types.includes('OutcomeObserved') ? types : undefined;
    });
    // Result delivery may add that nobody waited for the answer (no agent asked): no attempt besides the one.
    expect(after.filter((type) => type !== 'ResultDeliveryFailed')).toEqual(['Dispatched', 'OutcomeObserved']);
    await quietFor(300, before + 1);
    const effects = await scenario.target.effects();
    expect(effects.requests.at(-1)).toMatchObject({ method: 'PUT', idempotencyKey: id, status: 200 });
    expect(executionOf(await status(id))).toMatchObject({ id, attempts: 4 });
  });

  it('given an irreversible call held for review, when one operator resolves it with --resend, then nothing is sent until a second operator confirms: the same one twice is refused', async () => {
    const payment = { payment_reference: 'order-resend-002', amount_cents: 1990, card_token: 'tok_resend_000002' };
    const id = await heldPayment(payment);
    const resolve = (by: string) =>
      oncegate(scenario.folder, ['review', 'resolve', id, '--as', 'not-executed', '--resend', '--reason', 'the processor shows no charge', '--by', by]);

    const asked = await resolve('user:alice');
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toMatch(/the resend waits for a second operator/);
    await quietFor(500, 1);
    expect(await afterResolution(id)).toEqual([]);
    expect((await oncegate(scenario.folder, ['review', 'list'])).stdout).toMatch(
      new RegExp(`^${id}\tsend_payment\tagent:dev\tirreversible_outcome_unknown\tsince [^\t]+\tattempts 1\tresolved not executed; resend asked by user:alice, waiting for a second operator\n$`),
    );
    const told = await status(id);
    expect(executionOf(told)).toMatchObject({ state: 'not_executed' });
    expect(textOf(told)).toMatch(/user:alice asked to send it again; that waits for a second operator to confirm it\.$/);

    const twice = await resolve('user:alice');
    expect(twice.code).toBe(1);
    expect(twice.stderr).toBe(`by: user:alice asked to send ${id} again already (at ${/at (\S+)\)/.exec(twice.stderr)?.[1]}); a resend of an irreversible call needs a second operator: another operator resolves it as not_executed with a resend\n`);
    await quietFor(300, 1);

    const confirmed = await resolve('user:bob');
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toMatch(/resend confirmed \(asked by user:alice, confirmed by user:bob\): attempt 2 is sent now|attempt 2 is on its way/);
    const after = await eventually(async () => {
      const types = await afterResolution(id);
      return types.includes('OutcomeObserved') ? types : undefined;
    });
    expect(after.filter((type) => type !== 'ResultDeliveryFailed')).toEqual(['Dispatched', 'OutcomeObserved']);
    await quietFor(300, 2);
    expect((await scenario.target.effects()).requests.map((request) => request.idempotencyKey)).toEqual([id, id]);
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
