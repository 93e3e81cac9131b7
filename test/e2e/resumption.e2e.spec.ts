import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';

interface ExecutionInfo {
  id: string;
  state: string;
  attached: boolean;
}
const executionOf = (result: unknown): ExecutionInfo =>
  (result as { structuredContent: { execution: ExecutionInfo } }).structuredContent.execution;

describe('gateway end to end: a cut SSE stream resumes with Last-Event-ID', () => {
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

  it('given the response stream is cut mid-call, when the client resumes, then it gets the result without a new dispatch', async () => {
    await target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    const { client } = await connectClient(gateway.url, gateway.devToken, {
      fetch: drop.fetch,
      reconnect: { initialDelayMs: 300, maxRetries: 5 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'resume.me', value: 'yes' } });
    await eventually(async () => ((await target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    drop.dropAll();
    await target.control('release', { match: 'PUT /config/:name' });
    const result = await call;
    await client.close();

    const [executionId] = await executionIds(folder.dataDir);
    expect(executionOf(result)).toMatchObject({ id: executionId, attached: false });
    expect(result.isError).toBe(false);
    expect((await target.effects()).requestsTotal).toBe(1);
    expect((await executionEvents(folder.dataDir, executionId!)).filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect(drop.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  });

  it('given the stream is cut and the gateway restarts, when the client resumes with Last-Event-ID, then the restored session replays the result', async () => {
    await target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    const { client } = await connectClient(gateway.url, gateway.devToken, {
      fetch: drop.fetch,
      reconnect: { initialDelayMs: 2_500, maxRetries: 6 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'across.restart', value: 'yes' } });
    await eventually(async () => ((await target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    drop.dropAll();
    await target.control('release', { match: 'PUT /config/:name' });
    const [executionId] = await executionIds(folder.dataDir);
    // The outcome arrives while the client is away; its response is kept for the resumption.
    await eventually(async () => ((await executionEvents(folder.dataDir, executionId!)).includes('OutcomeObserved') ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await gateway.stop();
    gateway = await startGatewayProcess(folder);

    const result = await call;
    await client.close();
    expect(executionOf(result)).toMatchObject({ id: executionId });
    expect(result.isError).toBe(false);
    expect((await target.effects()).requestsTotal).toBe(1);
    expect(gateway.output()).toMatch(/restored session/);
    expect(drop.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  });
});
