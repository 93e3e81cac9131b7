import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, sameFolderOnAnotherPort, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, executionIds, readJournal } from '../support/journal';
import { connectClient, connectStdioClient } from '../support/mcp-clients';
import { executionOf, textOf } from '../support/scenario';

/** A short liveness lease, so that a gone process is noticed within the test. */
const LEASE = { instance_lease: '1s' };

/**
 * Gateway processes on one data folder: each is its own instance, an attempt is "lost" only when the process
 * that sent it is really gone, and then it settles by its class whoever notices.
 */
describe('gateway end to end: instances on one data folder', () => {
  let target: DemoTargetProcess | undefined;
  let folder: GatewayFolder | undefined;
  const gateways: GatewayProcess[] = [];
  let stdio: Client | undefined;

  afterEach(async () => {
    await stdio?.close();
    for (const gateway of gateways.splice(0)) await gateway.stop();
    await target?.stop();
    folder?.dispose();
    stdio = target = folder = undefined;
  });

  async function executionEventsWithData(executionId: string) {
    return readJournal(folder!.dataDir, [`execution-${executionId}`]);
  }

  it('given a call in flight on one gateway, when a second gateway starts on the same data folder, then the first call completes with the target\'s real answer', async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url, LEASE);
    const first = await startGatewayProcess(folder);
    gateways.push(first);
    await target.control('hold', { match: 'PUT /config/:name' });
    const { client } = await connectClient(first.url, first.devToken);
    const call = client.callTool({ name: 'set_config', arguments: { name: 'two.gateways', value: 'on' } });
    await eventually(async () => ((await target!.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the target to receive the request');

    gateways.push(await startGatewayProcess(await sameFolderOnAnotherPort(folder)));
    // Several leases long: the second gateway has looked at the first one's attempt again and again meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await target.control('release', { match: 'PUT /config/:name' });

    const answer = await call;
    await client.close();
    expect(answer.isError).toBe(false);
    expect(executionOf(answer)).toMatchObject({ state: 'completed', attached: false, attempts: 1 });
    expect(answer.structuredContent).toMatchObject({ response: { name: 'two.gateways', value: 'on' } });
    const [executionId] = await executionIds(folder.dataDir);
    const types = (await executionEventsWithData(executionId!)).map((event) => event.type);
    expect(types).not.toContain('OutcomeUnknown');
    expect(types).toContain('OutcomeObserved');
  });

  it('given an irreversible call in flight when its gateway is killed, when a gateway with another instance id starts on the folder (`oncegate stdio`), then the attempt is settled as lost, held for review, and a retry is told so', async () => {
    target = await startDemoTargetProcess();
    // The default lease: on one machine the killed process's instance lock tells at once that it is gone.
    folder = await gatewayFolder(target.url);
    // A response timeout far beyond the test, so that only the process's death can end this attempt.
    const tools = join(folder.dir, 'tools.yaml');
    writeFileSync(tools, readFileSync(tools, 'utf8').replace('response_timeout: 1500ms', 'response_timeout: 60s'));
    const killed = await startGatewayProcess(folder);
    gateways.push(killed);
    await target.control('hold', { match: 'POST /payments' });
    const payment = { payment_reference: 'order-killed-0001', amount_cents: 4200, card_token: 'tok_killed_00001' };
    const { client } = await connectClient(killed.url, killed.devToken);
    void client.callTool({ name: 'send_payment', arguments: payment }).catch(() => undefined);
    await eventually(async () => ((await target!.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the target to receive the request');
    await killed.kill();
    await client.close().catch(() => undefined);
    await target.control('release', {});

    stdio = await connectStdioClient(folder, killed.devToken);
    const [executionId] = await executionIds(folder.dataDir);
    const events = await eventually(
      async () => {
        const recorded = await executionEventsWithData(executionId!);
        return recorded.some((event) => event.type === 'ReviewRequired') ? recorded : undefined;
      },
      10_000,
      'the lost attempt to be held for review',
    );
    expect(events.find((event) => event.type === 'OutcomeUnknown')?.data).toMatchObject({ attempt: 1, reason: 'dispatcher_lost' });
    expect(events.find((event) => event.type === 'ReviewRequired')?.data).toMatchObject({ reason: 'irreversible_outcome_unknown' });

    const retry = await stdio.callTool({ name: 'send_payment', arguments: payment });
    expect(executionOf(retry)).toMatchObject({ id: executionId, state: 'needs_review', attached: true, attempts: 1 });
    expect(textOf(retry)).toMatch(/review/);
    expect((await target.effects()).byEndpoint['POST /payments']).toBe(1);
    expect((await executionEventsWithData(executionId!)).filter((event) => event.type === 'Dispatched')).toHaveLength(1);
  });
});
