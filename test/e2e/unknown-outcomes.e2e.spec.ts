import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient } from '../support/mcp-clients';

interface ExecutionInfo {
  id: string;
  state: string;
  attached: boolean;
  attempts: number;
}
const executionOf = (result: unknown): ExecutionInfo =>
  (result as { structuredContent: { execution: ExecutionInfo } }).structuredContent.execution;
const textOf = (result: unknown): string => (result as { content: Array<{ text: string }> }).content[0]!.text;

const payment = { payment_reference: 'order-20261130-0001', amount_cents: 1250, card_token: 'tok_canary_5f1e9a' };

describe('gateway end to end: unknown outcomes are told, never re-sent by a retry', () => {
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;

  beforeEach(async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url);
    gateway = await startGatewayProcess(folder);
  });

  afterEach(async () => {
    await gateway?.stop();
    await target?.stop();
    folder?.dispose();
  });

  it('given a target that times out after receiving the body, when the agent calls and retries an irreversible tool, then it is told the outcome is unknown and nothing is re-sent', async () => {
    await target.control('hang', { match: 'POST /payments' });
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const first = await client.callTool({ name: 'send_payment', arguments: payment });
    expect(first.isError).toBe(false);
    expect(executionOf(first).state).toBe('outcome_unknown');
    expect(textOf(first)).toMatch(/Outcome unknown/);
    expect(textOf(first)).toMatch(/Nothing was re-sent/);

    const retry = await client.callTool({ name: 'send_payment', arguments: payment });
    await client.close();
    expect(executionOf(retry)).toMatchObject({ id: executionOf(first).id, attached: true, state: 'outcome_unknown', attempts: 1 });
    expect(retry.isError).toBe(false);
    expect((await target.effects()).byEndpoint['POST /payments']).toBe(1);
    expect((await target.effects()).requestsTotal).toBe(1);
    expect(await executionEvents(folder.dataDir, executionOf(first).id)).toEqual([
      'ExecutionAccepted',
      'ExecutionAuthorized',
      'Dispatched',
      'OutcomeUnknown',
      'RetryAttached',
    ]);
  });

  it('given kill -9 between Dispatched and OutcomeObserved, when the gateway restarts and the irreversible call is retried, then no second request is sent and the outcome is unknown', async () => {
    await target.control('hold', { match: 'POST /payments' });
    const { client } = await connectClient(gateway.url, gateway.devToken);
    void client.callTool({ name: 'send_payment', arguments: payment }).catch(() => undefined);
    await eventually(async () => ((await target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the payment to arrive');
    const [executionId] = await executionIds(folder.dataDir);
    expect(await executionEvents(folder.dataDir, executionId!)).toContain('Dispatched');
    await gateway.kill();
    await client.close().catch(() => undefined);
    await target.control('release', { match: 'POST /payments' });

    gateway = await startGatewayProcess(folder);
    const again = await connectClient(gateway.url, gateway.devToken);
    const retry = await again.client.callTool({ name: 'send_payment', arguments: payment });
    await again.client.close();

    expect(executionOf(retry)).toMatchObject({ id: executionId, attached: true, state: 'outcome_unknown', attempts: 1 });
    expect(textOf(retry)).toMatch(/Outcome unknown/);
    expect((await target.effects()).requestsTotal).toBe(1);
    const events = await executionEvents(folder.dataDir, executionId!);
    expect(events.slice(0, 4)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeUnknown']);
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
  });

  it('given kill -9 between Dispatched and OutcomeObserved, when the gateway restarts and the idempotent write is retried, then it is re-dispatched with the same Idempotency-Key', async () => {
    await target.control('hold', { match: 'PUT /config/:name' });
    const args = { name: 'replicas', value: '5' };
    const { client } = await connectClient(gateway.url, gateway.devToken);
    void client.callTool({ name: 'set_config', arguments: args }).catch(() => undefined);
    await eventually(async () => ((await target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    const [executionId] = await executionIds(folder.dataDir);
    await gateway.kill();
    await client.close().catch(() => undefined);
    await target.control('release', { match: 'PUT /config/:name' });

    gateway = await startGatewayProcess(folder);
    const again = await connectClient(gateway.url, gateway.devToken);
    const retry = await again.client.callTool({ name: 'set_config', arguments: args });
    await again.client.close();

    expect(executionOf(retry)).toMatchObject({ id: executionId, attached: true, attempts: 2 });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(retry).state);
    expect(retry.isError).toBe(false);
    const effects = await target.effects();
    expect(effects.requests.map((r) => r.idempotencyKey)).toEqual([executionId, executionId]);
    expect(effects.total).toBe(1);
    const events = await executionEvents(folder.dataDir, executionId!);
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
