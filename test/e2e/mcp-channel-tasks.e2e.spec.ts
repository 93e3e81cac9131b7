import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, includeInContracts, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf, textOf } from '../support/scenario';

/**
 * The mcp channel in front of an upstream that speaks 2026-07-28 with the tasks extension — here another Oncegate
 * gateway, whose tasks are its executions. The front gateway (`oncegate start`, the channel inline) calls the upstream's
 * set_config as a task and journals the task's reference; killed with kill -9 while the upstream's target holds the
 * request, it is started again, finds its attempt's process gone, resumes the task at the upstream and records the
 * upstream's answer: the agent's retry reads it, and the target was written once. The contract is what `oncegate
 * upstream add` writes, the class overridden to irreversible: without the task, the call would be held for review.
 */
describe('the mcp channel in front of a 2026-07-28 upstream with the tasks extension (another gateway)', () => {
  let target: DemoTargetProcess;
  let innerFolder: GatewayFolder;
  let inner: GatewayProcess;
  let folder: GatewayFolder;
  let front: GatewayProcess | undefined;

  beforeAll(async () => {
    target = await startDemoTargetProcess();
    innerFolder = await gatewayFolder(target.url, { call_wait: '10m' });
    inner = await startGatewayProcess(innerFolder);
    folder = await gatewayFolder('http://127.0.0.1:9', { instance_lease: '2s' });
    // The upstream's token in the front's vault, bound to where the upstream listens.
    const stored = await oncegate(folder, ['vault', 'set', 'inner-token', '--kind', 'password', '--bind', `127.0.0.1:${innerFolder.port}`, '--from-env', 'INNER_TOKEN'], { INNER_TOKEN: inner.devToken });
    expect(stored.code, stored.stderr).toBe(0);
    const added = await oncegate(folder, ['upstream', 'add', 'inner', '--url', inner.url, '--credential', 'inner-token', '--only', 'set_config', '--class', 'set_config=irreversible', '--out', 'upstream-inner.yaml']);
    expect(added.code, added.stderr).toBe(0);
    includeInContracts(folder, 'upstream-inner.yaml');
    front = await startGatewayProcess(folder);
  }, 120_000);

  afterAll(async () => {
    await front?.stop();
    await inner?.stop();
    await target?.stop();
    folder?.dispose();
    innerFolder?.dispose();
  });

  it('given a call the upstream runs as a task, then its reference is journaled and the agent reads the upstream answer', async () => {
    const { client } = await connectClient(front!.url, front!.devToken);
    const answer = await client.callTool({ name: 'inner_set_config', arguments: { name: 'tasks.first', value: 'on' } });
    await client.close();

    expect(answer.isError ?? false, textOf(answer)).toBe(false);
    const { id } = executionOf(answer);
    const events = (await readJournal(folder.dataDir)).filter((event) => event.metadata['executionId'] === id);
    const started = events.find((event) => event.type === 'AttemptTaskStarted')!;
    // The upstream's task is its own execution: its id names it.
    expect(started.data).toMatchObject({ attempt: 1, task: { generation: 'v2', taskId: expect.stringMatching(/^ex_/), originalOperation: 'tools/call' } });
    expect(events.map((event) => event.type).slice(0, 5)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'AttemptTaskStarted', 'OutcomeObserved']);
  });

  it('given the front gateway is killed -9 while the upstream task waits on its target, then once started again it resumes the task and records the answer: the retry reads it, and the target was written once', async () => {
    await target.control('hold', { match: 'PUT /config/tasks.killed' });
    const args = { name: 'tasks.killed', value: 'v1' };
    const { client } = await connectClient(front!.url, front!.devToken);
    const first = client.callTool({ name: 'inner_set_config', arguments: args }).catch((error: unknown) => error);
    // The task of this call journaled: the one whose execution has no outcome yet.
    const started = await eventually(
      async () => {
        const journal = await readJournal(folder.dataDir);
        const settled = new Set(journal.filter((event) => event.type === 'OutcomeObserved').map((event) => event.metadata['executionId']));
        return journal.find((event) => event.type === 'AttemptTaskStarted' && !settled.has(event.metadata['executionId']));
      },
      30_000,
      'the task journaled',
    );
    await eventually(async () => ((await target.effects()).requests.some((request) => request.path === '/config/tasks.killed') ? true : undefined), 30_000, 'the write at the target');
    const id = String(started.metadata['executionId']);

    await front!.kill();
    // The agent's connection went with the process.
    await client.close().catch(() => undefined);
    await first;
    front = await startGatewayProcess(folder);
    await target.control('release', { match: 'PUT /config/tasks.killed' });

    const observed = await eventually(
      async () => (await readJournal(folder.dataDir)).find((event) => event.type === 'OutcomeObserved' && event.metadata['executionId'] === id),
      60_000,
      'the outcome from the resumed task',
    );
    expect(observed.data).toMatchObject({ attempt: 1, outcome: 'succeeded', source: 'task' });
    const again = await connectClient(front.url, front.devToken);
    const retried = await again.client.callTool({ name: 'inner_set_config', arguments: args });
    await again.client.close();
    expect(executionOf(retried)).toMatchObject({ id, attached: true });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(retried).state);
    expect((await target.effects()).requests.filter((request) => request.path === '/config/tasks.killed')).toHaveLength(1);
    const events = (await readJournal(folder.dataDir)).filter((event) => event.metadata['executionId'] === id);
    expect(events.filter((event) => event.type === 'Dispatched')).toHaveLength(1);
    expect(events.some((event) => event.type === 'ReviewRequired')).toBe(false);
  }, 180_000);
});
