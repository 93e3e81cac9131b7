import { describe, expect, it } from 'vitest';
import { oncegate } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { gatewayScenario, executionOf } from '../support/scenario';



describe('gateway end to end: every retry matched to its execution', () => {
  const scenario = gatewayScenario();

  it('given a connection dropped after the target accepted, when the same call is made again, then it attaches to the stored result and the target saw one request', async () => {
    const run = { 'io.oncegate/run': 'run-dropped-connection' };
    const args = { name: 'db.pool', value: '64' };
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    const first = await connectClient(scenario.gateway.url, scenario.gateway.devToken, { fetch: drop.fetch });
    const lost = first.client.callTool({ name: 'set_config', arguments: args, _meta: run }).catch((error: unknown) => error);
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the target to receive the request');

    drop.dropAll();
    await first.client.close();
    expect(await lost).toBeInstanceOf(Error);
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    const [executionId] = await executionIds(scenario.folder.dataDir);
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId!)).includes('ResultDeliveryFailed') ? true : undefined));

    const second = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retried = await second.client.callTool({ name: 'set_config', arguments: args, _meta: run });
    // A later request on the session is what proves the answer was received.
    await second.client.listTools();
    await second.client.close();

    expect(executionOf(retried)).toMatchObject({ id: executionId, attached: true, state: 'completed_result_not_delivered' });
    expect(retried.isError).toBe(false);
    expect((await scenario.target.effects()).requests.filter((r) => r.endpoint === 'PUT /config/:name')).toHaveLength(1);
    const events = await eventually(async () => {
      const types = await executionEvents(scenario.folder.dataDir, executionId!);
      return types.includes('ResultDelivered') ? types : undefined;
    });
    expect(events).toEqual([
      'ExecutionAccepted',
      'ExecutionAuthorized',
      'Dispatched',
      'OutcomeObserved',
      'ResultDeliveryFailed',
      'RetryAttached',
      'ResultDelivered',
    ]);
  });

  it('given 50 concurrent identical calls, when they race, then there is one execution and one target request', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => client.callTool({ name: 'set_config', arguments: { name: 'race', value: 'same' } })),
    );
    await client.close();
    const ids = new Set(results.map((result) => executionOf(result).id));
    expect(ids.size).toBe(1);
    expect(await executionIds(scenario.folder.dataDir)).toHaveLength(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    expect(results.filter((result) => !executionOf(result).attached)).toHaveLength(1);
  });

  it('given the same arguments from two actors, when both call, then there are two executions', async () => {
    const issued = await oncegate(scenario.folder, ['agents', 'add', 'second-agent']);
    expect(issued.code).toBe(0);
    const secondToken = issued.stdout.trim();
    const args = { name: 'shared', value: 'x' };
    const a = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const b = await connectClient(scenario.gateway.url, secondToken);
    const [fromA, fromB] = [
      await a.client.callTool({ name: 'set_config', arguments: args }),
      await b.client.callTool({ name: 'set_config', arguments: args }),
    ];
    await a.client.close();
    await b.client.close();
    expect(executionOf(fromA).id).not.toBe(executionOf(fromB).id);
    expect(executionOf(fromB).attached).toBe(false);
    expect((await scenario.target.effects()).requestsTotal).toBe(2);
  });

  it('given a completed call whose receipt a later request proved, when repeated inside the redelivery grace, then it is replayed; after the grace, it is a new execution', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const args = { name: 'grace', value: 'v1' };
    const first = executionOf(await client.callTool({ name: 'set_config', arguments: args }));
    await client.listTools();
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, first.id)).includes('ResultDelivered') ? true : undefined));

    const replay = executionOf(await client.callTool({ name: 'set_config', arguments: args }));
    expect(replay).toMatchObject({ id: first.id, attached: true, replayed: true });
    expect((await scenario.target.effects()).requestsTotal).toBe(1);

    await new Promise((resolve) => setTimeout(resolve, 2_200));
    const after = executionOf(await client.callTool({ name: 'set_config', arguments: args }));
    await client.close();
    expect(after.id).not.toBe(first.id);
    expect(after).toMatchObject({ attached: false, replayed: false });
    expect((await scenario.target.effects()).requestsTotal).toBe(2);
  });

  it('given a caller idempotency key, when it is reused with other arguments, then the call is refused naming the first execution', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const key = { 'io.oncegate/idempotency-key': 'deploy-2026-11-30-a' };
    const first = executionOf(await client.callTool({ name: 'set_config', arguments: { name: 'keyed', value: 'a' }, _meta: key }));
    const same = executionOf(await client.callTool({ name: 'set_config', arguments: { name: 'keyed', value: 'a' }, _meta: key }));
    expect(same).toMatchObject({ id: first.id, attached: true });
    const conflict = await client
      .callTool({ name: 'set_config', arguments: { name: 'keyed', value: 'b' }, _meta: key })
      .catch((error: unknown) => error);
    await client.close();
    expect(conflict).toMatchObject({ code: -32010 });
    expect((conflict as Error).message).toContain(first.id);
    expect(await executionIds(scenario.folder.dataDir)).toEqual([first.id]);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });

  it('given a completed call, when the agent asks for a new intent explicitly, then a second execution runs', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const args = { name: 'again', value: 'on-purpose' };
    const first = executionOf(await client.callTool({ name: 'set_config', arguments: args }));
    const second = executionOf(
      await client.callTool({ name: 'set_config', arguments: args, _meta: { 'io.oncegate/new-intent': true } }),
    );
    await client.close();
    expect(second.id).not.toBe(first.id);
    expect(second.attached).toBe(false);
    expect((await scenario.target.effects()).requestsTotal).toBe(2);
  });
});
