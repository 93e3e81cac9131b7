import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTasksUpstream, type TasksUpstream } from '@oncegate/service-dispatcher-mcp/testing';
/* eslint-disable @nx/enforce-module-boundaries -- the gateway, its processes and the agent's client are the shared e2e harness */
import { startService, type ServiceProcess } from '../../../deploy/local';
import { gatewayFolder, includeInContracts, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../../../test/support/gateway-process';
import { eventually, readJournal } from '../../../test/support/journal';
import { connectClient } from '../../../test/support/mcp-clients';
import { executionOf, textOf } from '../../../test/support/scenario';
/* eslint-enable @nx/enforce-module-boundaries */

/**
 * An upstream MCP server that runs its writes as tasks (the official v1 SDK's task support, 2025-11-25), put behind the
 * gateway with `oncegate upstream add`, its tools dispatched by the mcp channel as a process of its own. Killed with
 * kill -9 while a migration runs at the upstream, the channel leaves the task's reference in the journal; the next mcp
 * process resumes the task by it and records the upstream's result, so the agent's retry reads the outcome itself —
 * where without a task an irreversible call would be held for review — and the migration ran once.
 */
describe('the mcp dispatcher beside the gateway, in front of an upstream that runs its tools as tasks', () => {
  let dir: string;
  let upstream: TasksUpstream;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  let dispatcher: ServiceProcess;
  let client: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-dispatcher-mcp-tasks-'));
    upstream = await startTasksUpstream({ dir });
    folder = await gatewayFolder('http://127.0.0.1:9', { instance_lease: '2s', dispatch_channels: '[http, ssh]' });
    // The contract of the upstream's tools, as an operator writes it: class from the annotations, schema as listed.
    const added = await oncegate(folder, ['upstream', 'add', 'migrations', '--url', upstream.url, '--out', 'upstream-migrations.yaml']);
    expect(added.code, added.stderr).toBe(0);
    includeInContracts(folder, 'upstream-migrations.yaml');
    gateway = await startGatewayProcess(folder);
    dispatcher = await startService('dispatcher-mcp', { configFile: folder.configFile, cwd: folder.dir });
    ({ client } = await connectClient(gateway.url, gateway.devToken));
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await dispatcher?.stop();
    await gateway?.stop();
    await upstream?.stop();
    folder?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('given the contract upstream add wrote, then the migration is irreversible (destructive) and its call runs as a task at the upstream, its result read by the agent', async () => {
    const contract = readFileSync(join(folder.dir, 'upstream-migrations.yaml'), 'utf8');
    expect(contract).toMatch(/name: migrations_apply_migration[\s\S]*class: irreversible/);

    const answer = await client.callTool({ name: 'migrations_apply_migration', arguments: { name: 'users-email-idx', seconds: 0.2 } });

    expect(answer.isError ?? false).toBe(false);
    expect(textOf(answer)).toMatch(/migration users-email-idx applied \(task \w+\)/);
    const { id } = executionOf(answer);
    const types = (await readJournal(folder.journal)).filter((event) => event.metadata['executionId'] === id).map((event) => event.type);
    expect(types.slice(0, 5)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'AttemptTaskStarted', 'OutcomeObserved']);
  });

  it('given the mcp process is killed -9 while a migration runs as a task, then the next mcp process resumes the task and records its result: the agent is told unknown at first, its retry reads the result, and the migration ran once', async () => {
    const args = { name: 'orders-created-idx', seconds: 6 };
    const first = client.callTool({ name: 'migrations_apply_migration', arguments: args });
    // The upstream took the call (its task started) and the channel journaled the task's reference.
    const started = await eventually(
      async () => {
        const effect = upstream.folder.entries().find((entry) => entry.args['name'] === args.name);
        if (effect?.executionId == null) return undefined;
        return (await readJournal(folder.journal)).find((event) => event.type === 'AttemptTaskStarted' && event.metadata['executionId'] === effect.executionId);
      },
      30_000,
      'the task journaled',
    );
    const id = String(started.metadata['executionId']);

    await dispatcher.kill();
    dispatcher = await startService('dispatcher-mcp', { configFile: folder.configFile, cwd: folder.dir });

    // The sweeper finds the attempt's process gone once its lease lapsed: the waiting call is told the outcome is unknown.
    const told = await first;
    expect(executionOf(told)).toMatchObject({ id, state: 'outcome_unknown' });
    // The new process resumes the task by its journaled reference and records the upstream's result as the outcome.
    const observed = await eventually(
      async () => (await readJournal(folder.journal)).find((event) => event.type === 'OutcomeObserved' && event.metadata['executionId'] === id),
      40_000,
      'the outcome from the resumed task',
    );
    expect(observed.data).toMatchObject({ attempt: 1, outcome: 'succeeded', source: 'task' });

    const again = await client.callTool({ name: 'migrations_apply_migration', arguments: args });
    expect(executionOf(again)).toMatchObject({ id, attached: true });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(again).state);
    expect(textOf(again)).toContain(`migration ${args.name} applied (task ${(started.data as { task: { taskId: string } }).task.taskId})`);
    expect(textOf(again)).toContain('this is what its task at the target gave when asked again (nothing was sent twice)');
    expect(again.structuredContent).toMatchObject({ execution: { outcomeSource: 'task' } });
    expect(upstream.folder.effects(id)).toBe(1);
    const journal = (await readJournal(folder.journal)).filter((event) => event.metadata['executionId'] === id);
    expect(journal.filter((event) => event.type === 'Dispatched')).toHaveLength(1);
    expect(journal.map((event) => event.type)).toEqual(expect.arrayContaining(['AttemptTaskStarted', 'OutcomeUnknown', 'OutcomeObserved']));
    expect(journal.some((event) => event.type === 'ReviewRequired')).toBe(false);
  }, 120_000);
});
