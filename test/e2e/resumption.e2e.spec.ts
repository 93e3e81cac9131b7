import { describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { gatewayScenario, executionOf } from '../support/scenario';


describe('gateway end to end: a cut SSE stream resumes with Last-Event-ID', () => {
  const scenario = gatewayScenario();

  it('given the response stream is cut mid-call, when the client resumes, then it gets the result without a new dispatch', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken, {
      fetch: drop.fetch,
      reconnect: { initialDelayMs: 300, maxRetries: 5 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'resume.me', value: 'yes' } });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    drop.dropAll();
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    const result = await call;
    await client.close();

    const [executionId] = await executionIds(scenario.folder.dataDir);
    expect(executionOf(result)).toMatchObject({ id: executionId, attached: false });
    expect(result.isError).toBe(false);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    expect((await executionEvents(scenario.folder.dataDir, executionId!)).filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect(drop.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  });

  it('given the stream is cut and the gateway restarts, when the client resumes with Last-Event-ID, then the restored session replays the result', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken, {
      fetch: drop.fetch,
      reconnect: { initialDelayMs: 2_500, maxRetries: 6 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'across.restart', value: 'yes' } });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    drop.dropAll();
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    const [executionId] = await executionIds(scenario.folder.dataDir);
    // The outcome arrives while the client is away; its response is kept for the resumption.
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId!)).includes('OutcomeObserved') ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await scenario.gateway.stop();
    scenario.gateway = await startGatewayProcess(scenario.folder);

    const result = await call;
    await client.close();
    expect(executionOf(result)).toMatchObject({ id: executionId });
    expect(result.isError).toBe(false);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    expect(scenario.gateway.output()).toMatch(/restored session/);
    expect(drop.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  });

  it('given a call in flight when the gateway is killed -9, when it restarts and the client resumes its stream, then the original call is answered with what became of it', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const seen = droppableFetch();
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken, {
      fetch: seen.fetch,
      reconnect: { initialDelayMs: 1_000, maxRetries: 40 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'killed.mid.call', value: 'yes' } }, undefined, { timeout: 120_000 });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    const [executionId] = await executionIds(scenario.folder.dataDir);
    await scenario.gateway.kill();
    // The target finishes the write; its answer has nowhere to go.
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    scenario.gateway = await startGatewayProcess(scenario.folder);

    const noAnswer = new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 30_000).unref());
    const result = await Promise.race([call, noAnswer]);
    await client.close();
    expect(result).not.toBe('no answer');
    // The gateway lost the attempt with the process: an unknown outcome, told as such, and nothing re-sent.
    expect(executionOf(result)).toMatchObject({ id: executionId, attached: false, state: 'outcome_unknown' });
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    expect(seen.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  }, 90_000);
});
