import { describe, expect, it } from 'vitest';
import { executionEvents } from '../support/journal';
import { callOnce } from '../support/mcp-clients';
import { executionOf, gatewayScenario, textOf } from '../support/scenario';

/**
 * What the agent is told matches what happened (docs/gateway.md, what the agent is told): an error answer of the
 * target is `completed` with the status, never "nothing was sent"; `failed` is said only when nothing left.
 */
describe('gateway end to end: the outcome words an agent is told', () => {
  const scenario = gatewayScenario();

  const call = (name: string, args: Record<string, unknown>) => callOnce(scenario.gateway, name, args);

  it('given a payment the target takes and then answers 500, when the agent calls and calls again, then it is told completed with an error answer that may have acted, and the retry gets the same answer without a second charge', async () => {
    await scenario.target.control('behave', { match: 'POST /payments', action: 'status', status: 500, applyEffect: true, times: 1 });
    const payment = { payment_reference: 'order-500-after-charge', amount_cents: 4200, card_token: 'tok_words_000001' };

    const first = await call('send_payment', payment);
    const id = executionOf(first).id;
    expect(first.isError).toBe(true);
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(first).state);
    expect(executionOf(first)).toMatchObject({ attempts: 1, attached: false });
    expect(first.structuredContent).toMatchObject({ execution: { targetStatus: 500, errorAnswer: true } });
    expect(textOf(first)).toMatch(/^send_payment completed with an error answer: the target answered 500\./);
    expect(textOf(first)).toContain('The target may have acted: it answered with an error, and an error answer does not prove that nothing happened');
    expect(textOf(first)).toMatch(/is matched to this execution until its correlation window ends at \S+ and gets this same answer back: it is not sent again\./);
    expect(textOf(first)).not.toMatch(/nothing was sent|nothing was retried|\bfailed\b/i);
    const effects = await scenario.target.effects();
    expect(effects.byEndpoint['POST /payments']).toBe(1);
    expect(effects.requests.filter((request) => request.path === '/payments')).toEqual([expect.objectContaining({ effect: true, status: 500 })]);

    const again = await call('send_payment', payment);
    expect(executionOf(again)).toMatchObject({ id, attached: true, attempts: 1 });
    expect(again.isError).toBe(true);
    expect(textOf(again)).toMatch(/^send_payment completed with an error answer: the target answered 500\./);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    const events = await executionEvents(scenario.folder.dataDir, id);
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect(events).toContain('OutcomeObserved');
  });

  it('given a target nobody listens on, when the agent calls, then it is told failed: nothing was sent, and why', async () => {
    await scenario.target.stop();
    const result = await call('set_config', { name: 'words.flag', value: 'on' });
    expect(result.isError).toBe(true);
    expect(executionOf(result)).toMatchObject({ state: 'failed', attempts: 1 });
    expect(result.structuredContent).toMatchObject({ execution: { targetStatus: null, errorAnswer: false, outcomeSource: 'not_sent' } });
    expect(textOf(result)).toMatch(/^set_config failed: nothing was sent \(.*ECONNREFUSED.*\); nothing reached the target\./);
    expect(textOf(result)).not.toMatch(/completed|may have acted/);
  });
});
