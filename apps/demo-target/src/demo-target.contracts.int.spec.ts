import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseContractFile } from '@oncegate/contracts';
import type { ToolContract } from '@oncegate/contracts';
import { HttpDispatcher } from '@oncegate/channel-http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoTarget } from './demo-target';
import type { DemoTarget } from './demo-target';

/** examples/tools.yaml and the files it includes, pointed at this test's demo target instead of port 8790. */
function exampleTools(port: number): Map<string, ToolContract> {
  const read = (file: string) => readFileSync(file, 'utf8').replaceAll('127.0.0.1:8790', `127.0.0.1:${port}`);
  const file = fileURLToPath(new URL('../../../examples/tools.yaml', import.meta.url));
  return new Map(parseContractFile(read(file), file, { readIncluded: read }).tools.map((tool) => [tool.name, tool]));
}

function withResponseTimeout(tool: ToolContract, responseTimeoutMs: number): ToolContract {
  return { ...tool, limits: { ...tool.limits, responseTimeoutMs } };
}

const PAYMENT_ARGS = { payment_reference: 'order-0001', amount_cents: 1250, card_token: 'tok_test_42424242' };

describe('examples/tools.yaml against the demo target, through the HTTP dispatcher', () => {
  let target: DemoTarget;
  let tools: Map<string, ToolContract>;
  const dispatcher = new HttpDispatcher();
  const tool = (name: string): ToolContract => {
    const found = tools.get(name);
    if (found === undefined) throw new Error(`no tool ${name} in examples/tools.yaml`);
    return found;
  };

  beforeAll(async () => {
    target = await startDemoTarget({ port: 0 });
    tools = exampleTools(target.port);
  });
  afterEach(() => target.reset());
  afterAll(async () => {
    await dispatcher.close();
    await target.close();
  });

  it.each([
    ['get_build', { build_id: '42' }, 200],
    ['set_config', { name: 'db.pool', value: '20' }, 200],
    ['update_inventory', { sku: 'SKU-1', quantity: 3, expected_version: 0 }, 200],
    ['send_payment', PAYMENT_ARGS, 201],
    ['rotate_credential', { credential_name: 'deploy-key' }, 200],
  ])('given the example tool %s, then the demo target answers it with %i', async (name, args, status) => {
    const result = await dispatcher.send({ executionId: 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E', tool: tool(name), arguments: args });

    expect(result).toMatchObject({ kind: 'response', outcome: 'succeeded', status });
  });

  it('given a held payment answer, then the dispatcher reports unknown while the target shows exactly one charge', async () => {
    target.hold('POST /payments');

    const result = await dispatcher.send({ executionId: 'ex_held', tool: withResponseTimeout(tool('send_payment'), 300), arguments: PAYMENT_ARGS });

    expect(result).toMatchObject({ kind: 'unknown', reason: 'timeout_after_send' });
    expect(target.effects()).toMatchObject({ total: 1, byEndpoint: { 'POST /payments': 1 }, requests: [{ idempotencyKey: 'ex_held' }] });
    target.release();
  });

  it('given a dropped connection on set_config, then sending it again with the same execution id changes nothing more', async () => {
    target.behave({ match: 'PUT /config/:name', action: 'reset', times: 1 });
    const attempt = { executionId: 'ex_config', tool: tool('set_config'), arguments: { name: 'db.pool', value: '20' } };

    const first = await dispatcher.send(attempt);
    const second = await dispatcher.send(attempt);

    expect(first).toMatchObject({ kind: 'unknown', reason: 'connection_reset' });
    expect(second).toMatchObject({ kind: 'response', outcome: 'succeeded', headers: { 'idempotent-replayed': 'true' } });
    expect(target.effects()).toMatchObject({ total: 1, requestsTotal: 2 });
  });

  it('given a 502 after the charge, then the dispatcher reports unknown, not a failure that would invite a retry', async () => {
    target.behave({ match: 'POST /payments', action: 'status', status: 502, applyEffect: true, times: 1 });

    const result = await dispatcher.send({ executionId: 'ex_502', tool: tool('send_payment'), arguments: PAYMENT_ARGS });

    expect(result).toMatchObject({ kind: 'unknown', reason: 'timeout_after_send' });
    expect(target.effects().total).toBe(1);
  });
});
