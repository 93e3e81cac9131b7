import { describe, expect, it } from 'vitest';
import { lostOnTheWay, OncegateClient } from '@oncegate/client';
import { oncegate } from '../support/gateway-process';
import { eventually, executionEvents, readJournal } from '../support/journal';
import { droppableFetch } from '../support/mcp-clients';
import { executionOf, gatewayScenario } from '../support/scenario';

describe('@oncegate/client: a call lost to the network is re-issued with its caller key and resolves to the first execution', () => {
  const scenario = gatewayScenario({ call_wait: '10s' });

  it.each([
    ['auto', '2026-07-28'],
    ['legacy', '2025-11-25'],
  ] as const)('given revision %s, when the connection drops while the target holds the answer, then the call still resolves to the one execution, and there is one effect', async (revision, protocol) => {
    const network = droppableFetch();
    const client = await OncegateClient.connect({ url: scenario.gateway.url, token: scenario.gateway.devToken, fetch: network.fetch, revision, minRetryDelayMs: 50 });
    expect(client.protocolVersion).toBe(protocol);
    await scenario.target.control('hold', { match: 'PUT /config/helper.lost' });
    const call = client.callTool('set_config', { name: 'helper.lost', value: 'v' });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined));
    network.dropAll();
    const executionId = (await readJournal(scenario.folder.dataDir)).find((event) => event.type === 'ExecutionAccepted')!.metadata['executionId'] as string;
    if (protocol === '2026-07-28') {
      // No stream to resume in this revision: the helper re-issues the call, which attaches while the target still holds it.
      await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId)).includes('RetryAttached') ? true : undefined));
    } else {
      // 2025-11-25: the SDK first resumes the cut stream (Last-Event-ID); the helper re-issues only if that fails too.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    }
    await scenario.target.control('release', { match: 'PUT /config/helper.lost' });
    const answer = await call;
    await client.close();

    expect(executionOf(answer).id).toBe(executionId);
    if (protocol === '2026-07-28') expect(executionOf(answer).attached).toBe(true);
    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    // Both calls carried one caller key: the second was matched by it.
    const keyed = (await readJournal(scenario.folder.dataDir)).filter((event) => event.type === 'ExecutionAccepted');
    expect(keyed).toHaveLength(1);
    expect(keyed[0]!.data).toMatchObject({ intentScope: { kind: 'key', source: 'caller' } });
  });

  it('given two calls in flight on one client, when one is lost and made again, then the other is left alone: its execution is not cancelled', async () => {
    const network = droppableFetch();
    const client = await OncegateClient.connect({ url: scenario.gateway.url, token: scenario.gateway.devToken, fetch: network.fetch, minRetryDelayMs: 50 });
    expect(client.protocolVersion).toBe('2026-07-28');
    const payout = client.callTool('send_payout', { payment_reference: 'payout-helper-0001', amount_cents: 300 });
    const payoutId = await eventually(async () => (await readJournal(scenario.folder.dataDir)).find((event) => event.type === 'ApprovalRequested')?.metadata['executionId'] as string | undefined);
    await scenario.target.control('hold', { match: 'PUT /config/helper.other' });
    const other = client.callTool('set_config', { name: 'helper.other', value: 'v' });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined));
    network.dropMatching('helper.other');
    await scenario.target.control('release', { match: 'PUT /config/helper.other' });
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(await other).state);

    const approved = await oncegate(scenario.folder, ['approvals', 'approve', payoutId, '--reason', 'still wanted']);
    expect(approved.code, approved.stderr).toBe(0);
    const paid = executionOf(await payout);
    await client.close();
    expect(paid).toMatchObject({ id: payoutId });
    expect(await executionEvents(scenario.folder.dataDir, payoutId)).not.toContain('ExecutionCancelled');
    expect((await scenario.target.effects()).requests.map((request) => `${request.method} ${request.path}`).sort()).toEqual(['POST /payments', 'PUT /config/helper.other']);
  });

  it('given the gateway answers with an error (invalid arguments), then the call is not made again', async () => {
    let posts = 0;
    const counting: typeof fetch = (input, init) => {
      if (init?.method === 'POST' && String(init.body).includes('tools/call')) posts += 1;
      return fetch(input, init);
    };
    const client = await OncegateClient.connect({ url: scenario.gateway.url, token: scenario.gateway.devToken, fetch: counting, minRetryDelayMs: 10 });
    const refused = await client.callTool('set_config', { name: 'NOT VALID', value: 'v' }).catch((error: unknown) => error);
    await client.close();
    expect(String((refused as Error).message)).toMatch(/Invalid arguments for 'set_config'/);
    expect(lostOnTheWay(refused)).toBe(false);
    expect(posts).toBe(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given the caller gives its own key, when the same key is used again with the same arguments, then the first execution answers (replayed or attached)', async () => {
    const client = await OncegateClient.connect({ url: scenario.gateway.url, token: scenario.gateway.devToken });
    const first = await client.callTool('set_config', { name: 'helper.keyed', value: 'v' }, { idempotencyKey: 'deploy-2026-12-01-a' });
    const again = await client.callTool('set_config', { name: 'helper.keyed', value: 'v' }, { idempotencyKey: 'deploy-2026-12-01-a' });
    await client.close();
    expect(executionOf(again).id).toBe(executionOf(first).id);
    expect(executionOf(again).attached).toBe(true);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });
});
