import { describe, expect, it } from 'vitest';
import { createTaskSessionFromClient, resultFromTaskOutcome, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { oncegate, startGatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, readJournal } from '../support/journal';
import { connectModernClient, rawModernDispatch, type ModernClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario } from '../support/scenario';

const PAYOUT = { payment_reference: 'payout-task-0001', amount_cents: 1200 };
const FRAMING = {
  protocolVersion: '2026-07-28',
  clientInfo: { name: 'oncegate-e2e-tasks', version: '1.0.0' },
  clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

describe('the tasks extension (io.modelcontextprotocol/tasks) with its official client: a task is an execution', () => {
  // A call wait longer than any test: a task must come back once accepted, never after the call wait.
  const scenario = gatewayScenario({ call_wait: '10m' });

  async function taskSession(): Promise<{ client: ModernClient; session: TaskEnabledSession; raw: ReturnType<typeof rawModernDispatch> }> {
    const client = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken);
    const raw = rawModernDispatch(scenario.gateway.url, scenario.gateway.devToken);
    const session = createTaskSessionFromClient(client, { endpointId: 'oncegate-e2e', rawDispatch: raw as never, v2RequestFraming: FRAMING });
    return { client, session, raw };
  }

  it('given a payout that waits for approval, then the call returns a task whose id is the execution id, durable before it is returned, and it settles with the outcome once approved', async () => {
    const { client, session } = await taskSession();
    const execution = await session.callTool('send_payout', PAYOUT);
    const taskId = execution.handle!.taskId as string;
    expect(taskId).toMatch(/^ex_[0-9A-HJKMNP-TV-Z]{26}$/);
    // The task exists in the journal by the time its handle reached the client.
    expect(await executionEvents(scenario.folder.dataDir, taskId)).toContain('ExecutionAccepted');
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, taskId)).includes('ApprovalRequested') ? true : undefined));
    const approved = await oncegate(scenario.folder, ['approvals', 'approve', taskId, '--reason', 'supplier checked']);
    expect(approved.code, approved.stderr).toBe(0);
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome);
    await session.close();
    await client.close();
    expect(executionOf(result)).toMatchObject({ id: taskId });
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(result).state);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    // What the agent was told is in the stream: the call answered with a task still working, then the task's result
    // handed out by the tasks/get that carried it (nothing on this revision proves either was read).
    const told = await eventually(async () => {
      const answers = (await readJournal(scenario.folder.dataDir, [`execution-${taskId}`])).filter((event) => event.type === 'AnswerGiven');
      return answers.length >= 2 ? answers.map((event) => event.data as { told: { state: string; via?: string }; delivery: string; correlation: { jsonRpcId?: unknown } }) : undefined;
    });
    expect(told[0]).toMatchObject({ told: { state: 'awaiting_approval', via: 'task' }, delivery: 'unproven' });
    expect(told.slice(1)).toContainEqual(expect.objectContaining({ told: expect.objectContaining({ state: executionOf(result).state, via: 'task_result' }), delivery: 'unproven' }));
    expect(told.at(-1)!.correlation.jsonRpcId).not.toEqual(told[0]!.correlation.jsonRpcId);
  });

  it('given a task awaiting approval, when it is cancelled, then the execution is cancelled (task_cancel), tasks/get says cancelled, and nothing is sent', async () => {
    const { client, session, raw } = await taskSession();
    const execution = await session.callTool('send_payout', PAYOUT);
    const taskId = execution.handle!.taskId as string;
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, taskId)).includes('ApprovalRequested') ? true : undefined));
    const cancel = await raw({ jsonrpc: '2.0', id: 91, method: 'tasks/cancel', params: { taskId, _meta: envelope() } });
    expect(cancel).toMatchObject({ kind: 'result', result: { _meta: { 'io.oncegate/cancel': { cancelled: true } } } });
    const cancelled = (await readJournal(scenario.folder.dataDir)).find((event) => event.type === 'ExecutionCancelled')!;
    expect(cancelled.data).toMatchObject({ trigger: 'task_cancel' });
    const got = await raw({ jsonrpc: '2.0', id: 92, method: 'tasks/get', params: { taskId, _meta: envelope() } });
    expect(got).toMatchObject({ kind: 'result', result: { taskId, status: 'cancelled' } });
    expect((await oncegate(scenario.folder, ['approvals', 'approve', taskId, '--reason', 'too late'])).code).not.toBe(0);
    await session.close();
    await client.close();
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given a task already dispatched, when it is cancelled, then the answer says why not, the request is not aborted, and the task completes with one effect', async () => {
    const { client, session, raw } = await taskSession();
    await scenario.target.control('hold', { match: 'PUT /config/task.sent' });
    const execution = await session.callTool('set_config', { name: 'task.sent', value: 'v' });
    const taskId = execution.handle!.taskId as string;
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined));
    const working = await raw({ jsonrpc: '2.0', id: 93, method: 'tasks/get', params: { taskId, _meta: envelope() } });
    expect(working).toMatchObject({ kind: 'result', result: { taskId, status: 'working', statusMessage: expect.stringMatching(/dispatched/) } });
    const cancel = await raw({ jsonrpc: '2.0', id: 94, method: 'tasks/cancel', params: { taskId, _meta: envelope() } });
    expect(cancel).toMatchObject({ kind: 'result', result: { _meta: { 'io.oncegate/cancel': { cancelled: false, reason: expect.stringMatching(/already dispatched/) } } } });
    await scenario.target.control('release', { match: 'PUT /config/task.sent' });
    const { outcome } = await execution.settle();
    await session.close();
    await client.close();
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(resultFromTaskOutcome(outcome)).state);
    const events = await executionEvents(scenario.folder.dataDir, taskId);
    expect(events).toContain('CancellationRequested');
    expect(events).not.toContain('ExecutionCancelled');
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });

  it('given a task awaiting approval, when the gateway is killed with -9 and started again, then tasks/get still knows it, and it completes once approved', async () => {
    const raw = rawModernDispatch(scenario.gateway.url, scenario.gateway.devToken);
    const created = await raw({ method: 'tools/call', params: { name: 'send_payout', arguments: PAYOUT, _meta: envelope() } });
    expect(created).toMatchObject({ kind: 'result', result: { resultType: 'task', status: 'working' } });
    const taskId = (created as { result: { taskId: string } }).result.taskId;
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, taskId)).includes('ApprovalRequested') ? true : undefined));

    await scenario.gateway.kill();
    scenario.gateway = await startGatewayProcess(scenario.folder);
    const again = rawModernDispatch(scenario.gateway.url, scenario.gateway.devToken);
    const get = () => again({ method: 'tasks/get', params: { taskId, _meta: envelope() } });
    expect(await get()).toMatchObject({ kind: 'result', result: { taskId, status: 'working', statusMessage: expect.stringMatching(/awaiting approval/) } });
    const approved = await oncegate(scenario.folder, ['approvals', 'approve', taskId, '--reason', 'after the restart']);
    expect(approved.code, approved.stderr).toBe(0);
    const done = await eventually(async () => {
      const task = (await get()) as { result: { status: string; result?: unknown } };
      return task.result.status === 'completed' ? task.result : undefined;
    });
    expect(executionOf(done.result)).toMatchObject({ id: taskId });
    expect(['completed', 'completed_result_not_delivered', 'delivered']).toContain(executionOf(done.result).state);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });

  it('given the same call made again as a task, then it is the same task; a read and a client without the extension get plain results; another id is not found', async () => {
    const { client, session, raw } = await taskSession();
    const first = await session.callTool('send_payout', PAYOUT);
    // Made again from a fresh session (the client's own session refuses a second owner of one task id).
    const other = await taskSession();
    const again = await other.session.callTool('send_payout', PAYOUT);
    expect(again.handle!.taskId).toBe(first.handle!.taskId);
    await other.session.close();
    await other.client.close();
    const read = await raw({ jsonrpc: '2.0', id: 95, method: 'tools/call', params: { name: 'get_build', arguments: { build_id: '7' }, _meta: envelope() } });
    expect(read).toMatchObject({ kind: 'result', result: { structuredContent: { execution: { state: expect.any(String) } } } });
    expect((read as { result: { resultType?: string } }).result.resultType).not.toBe('task');
    const plain = await client.callTool({ name: 'set_config', arguments: { name: 'task.plain', value: 'v' } });
    expect(['completed', 'delivered']).toContain(executionOf(plain).state);
    const unknown = await raw({ jsonrpc: '2.0', id: 96, method: 'tasks/get', params: { taskId: 'ex_01J3Z6Y8QK4W5X2V7N9M0P1R2S', _meta: envelope() } });
    expect(unknown).toMatchObject({ kind: 'error', error: { code: -32602 } });
    await session.close();
    await client.close();
  });
});

function envelope() {
  return {
    'io.modelcontextprotocol/protocolVersion': FRAMING.protocolVersion,
    'io.modelcontextprotocol/clientInfo': FRAMING.clientInfo,
    'io.modelcontextprotocol/clientCapabilities': FRAMING.clientCapabilities,
  };
}
