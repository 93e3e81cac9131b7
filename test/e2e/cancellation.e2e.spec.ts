import { describe, expect, it } from 'vitest';
import { oncegate } from '../support/gateway-process';
import { eventually, executionEvents, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario, textOf } from '../support/scenario';

const PAYOUT = { payment_reference: 'payout-0000042', amount_cents: 990 };

describe('cancellation: a cancel withdraws its own caller', () => {
  const scenario = gatewayScenario({ call_wait: '10s' });

  it('given a call awaiting approval and the same call attached from another connection, when the first caller cancels, then the second still gets the outcome and there is one effect', async () => {
    const first = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const second = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const abort = new AbortController();
    const cancelled = first.client
      .callTool({ name: 'send_payout', arguments: PAYOUT }, undefined, { signal: abort.signal })
      .catch((error: unknown) => error);
    const executionId = await eventually(async () => {
      const requested = (await readJournal(scenario.folder.dataDir)).find((event) => event.type === 'ApprovalRequested');
      return requested?.metadata['executionId'] as string | undefined;
    });

    const attached = second.client.callTool({ name: 'send_payout', arguments: PAYOUT });
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId)).includes('RetryAttached') ? true : undefined));
    abort.abort('the first caller changed its mind');
    expect(await cancelled).toBeInstanceOf(Error);
    await eventually(async () =>
      (await executionEvents(scenario.folder.dataDir, executionId)).includes('CancellationRequested') ? true : undefined,
    );

    const approved = await oncegate(scenario.folder, ['approvals', 'approve', executionId, '--reason', 'the second caller still wants it']);
    expect(approved.code, approved.stderr).toBe(0);
    const answer = await attached;
    await first.client.close();
    await second.client.close();

    expect(textOf(answer)).not.toMatch(/cancelled/i);
    expect(executionOf(answer)).toMatchObject({ id: executionId, attached: true });
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(answer).state);
    const events = await executionEvents(scenario.folder.dataDir, executionId);
    expect(events).not.toContain('ExecutionCancelled');
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });

  it('given one caller waiting for an approval, when it cancels, then the execution is cancelled and nothing is sent', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const abort = new AbortController();
    const call = client.callTool({ name: 'send_payout', arguments: PAYOUT }, undefined, { signal: abort.signal }).catch((error: unknown) => error);
    const executionId = await eventually(async () => {
      const requested = (await readJournal(scenario.folder.dataDir)).find((event) => event.type === 'ApprovalRequested');
      return requested?.metadata['executionId'] as string | undefined;
    });
    abort.abort('the only caller changed its mind');
    expect(await call).toBeInstanceOf(Error);
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId)).includes('ExecutionCancelled') ? true : undefined));
    await client.close();
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });
});
