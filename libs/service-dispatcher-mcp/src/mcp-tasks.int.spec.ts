import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { DispatcherWorld } from '@oncegate/dispatcher-kit/host-testing';
import { definitionDigest, type UpstreamToolDefinition } from '@oncegate/mcp-upstream';
import { mcpKit } from './mcp-channel';
import { startTasksUpstream, type TasksUpstream } from './testing';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The upstream's live definition of apply_migration, as `oncegate upstream add` reads it. */
async function liveDefinition(url: string): Promise<UpstreamToolDefinition> {
  const client = new Client({ name: 'oncegate-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const { tools } = await client.listTools();
  await client.close();
  return tools.find((tool) => tool.name === 'apply_migration') as unknown as UpstreamToolDefinition;
}

function contract(url: string, definition: UpstreamToolDefinition, operationClass: string, responseTimeout: string): string {
  return `version: 1
tools:
  - name: migrations_apply_migration
    description: Apply a schema migration.
    class: ${operationClass}
    channel: mcp
    target: migrations/apply_migration
    correlation_window: 10m
    limits: { connect_timeout: 5s, response_timeout: ${responseTimeout} }
    input_schema: ${JSON.stringify(definition.inputSchema)}
    plugin:
      upstream: migrations
      url: ${JSON.stringify(url)}
      tool: apply_migration
      definition: "${definitionDigest(definition)}"
`;
}

/** A dispatcher of the mcp channel on a real journal, in front of the tasks upstream (started here). */
async function open(operationClass: string, responseTimeout: string) {
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-mcp-tasks-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const holder: { upstream: TasksUpstream } = { upstream: await startTasksUpstream({ dir }) };
  cleanups.push(() => holder.upstream.stop());
  const world = await DispatcherWorld.open({ kit: mcpKit, contract: contract(holder.upstream.url, await liveDefinition(holder.upstream.url), operationClass, responseTimeout) });
  cleanups.push(() => world.close());
  const { dispatcher } = await world.dispatcher();
  return {
    world,
    dispatcher,
    holder,
    /** Stops the upstream and starts it again on the same port: the tasks it ran are gone. */
    async restartUpstream() {
      await holder.upstream.stop();
      holder.upstream = await startTasksUpstream({ dir, port: holder.upstream.port });
    },
    async call(args: Record<string, unknown>) {
      const { executionId } = await world.call('migrations_apply_migration', args);
      await world.dispatch(executionId, dispatcher);
      return executionId;
    },
    types: async (executionId: string) => (await world.events(executionId as never)).map((event) => event.type),
  };
}

describe('the mcp channel with an upstream that runs its tools as tasks (2025-11-25, official v1 SDK server)', () => {
  it('given a call of a task-capable tool, then it runs as a task, whose reference is journaled before its outcome, and the agent reads its result', async () => {
    const { world, holder, call, types } = await open('irreversible', '10s');
    const executionId = await call({ name: 'add-index', seconds: 0.2 });

    expect(await types(executionId)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'AttemptTaskStarted', 'OutcomeObserved']);
    const started = (await world.last(executionId as never, 'AttemptTaskStarted'))!.data as { attempt: number; task: { taskId: string; generation: string; originalOperation: string } };
    expect(started).toMatchObject({ attempt: 1, task: { generation: 'v1', originalOperation: 'tools/call' } });
    expect((await world.last(executionId as never, 'OutcomeObserved'))!.data).toMatchObject({ outcome: 'succeeded', source: 'response' });
    expect(await world.resultBody(executionId as never)).toBe(`migration add-index applied (task ${started.task.taskId})`);
    expect(holder.upstream.folder.effects(executionId)).toBe(1);
  });

  it('given a task that outlives the attempt, then the outcome is unknown, and recovery resumes the task and records its result (source task), never sending it again', async () => {
    const { world, dispatcher, holder, call, types } = await open('irreversible', '1s');
    const executionId = await call({ name: 'backfill', seconds: 1.6 });
    expect((await world.last(executionId as never, 'OutcomeUnknown'))!.data).toMatchObject({ attempt: 1, reason: 'timeout_after_send' });

    const state = await world.recover(executionId as never, dispatcher);

    expect(state.status).toBe('completed');
    expect(await types(executionId)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'AttemptTaskStarted', 'OutcomeUnknown', 'OutcomeObserved']);
    expect((await world.last(executionId as never, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 1, outcome: 'succeeded', source: 'task' });
    expect(await world.resultBody(executionId as never)).toMatch(/^migration backfill applied \(task /);
    expect(holder.upstream.folder.effects(executionId)).toBe(1);
  });

  it('given a task the upstream still works on when resumed, then that is recorded and the irreversible call is held for review', async () => {
    const { world, dispatcher, holder, call } = await open('irreversible', '500ms');
    const executionId = await call({ name: 'rebuild', seconds: 20 });

    const state = await world.recover(executionId as never, dispatcher);

    expect(state.status).toBe('needs_review');
    expect((await world.last(executionId as never, 'AttemptTaskChecked'))!.data).toMatchObject({ attempt: 1, finding: 'working', reason: expect.stringMatching(/still works on task/) });
    expect(holder.upstream.folder.effects(executionId)).toBe(1);
  });

  it('given an irreversible call whose task the upstream lost (it restarted), then the finding is lost and the call is held for review, sent once', async () => {
    const { world, dispatcher, holder, call, restartUpstream } = await open('irreversible', '500ms');
    const executionId = await call({ name: 'reindex', seconds: 20 });
    await restartUpstream();

    const state = await world.recover(executionId as never, dispatcher);

    expect(state.status).toBe('needs_review');
    expect((await world.last(executionId as never, 'AttemptTaskChecked'))!.data).toMatchObject({ attempt: 1, finding: 'lost', reason: expect.stringMatching(/cannot give task/) });
    expect(holder.upstream.folder.effects(executionId)).toBe(1);
  });

  it('given an idempotent write whose task the upstream lost, then its class decides: nothing is sent until the agent retries, then attempt 2 goes under the same execution', async () => {
    const { world, dispatcher, holder, call, restartUpstream } = await open('idempotent_write', '500ms');
    const executionId = await call({ name: 'reindex', seconds: 20 });
    await restartUpstream();
    expect((await world.recover(executionId as never, dispatcher)).status).toBe('outcome_unknown');
    expect(holder.upstream.folder.effects(executionId)).toBe(1);

    await world.retry(executionId as never);
    await world.recover(executionId as never, dispatcher);

    const dispatched = (await world.events(executionId as never)).filter((event) => event.type === 'Dispatched').map((event) => (event.data as { attempt: number }).attempt);
    expect(dispatched).toEqual([1, 2]);
    expect(holder.upstream.folder.entries().filter((entry) => entry.executionId === executionId).map((entry) => entry.attempt)).toEqual([1, 2]);
  });
});
