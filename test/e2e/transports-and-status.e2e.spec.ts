import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import {
  gatewayFolder,
  oncegate,
  startGatewayProcess,
  type GatewayFolder,
  type GatewayProcess,
} from '../support/gateway-process';
import { eventually, executionEvents, executionIds, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf } from '../support/scenario';

const LAUNCHER = fileURLToPath(new URL('../../bin/oncegate.mjs', import.meta.url));


/** Issues a token for `agent` and connects the official client to `oncegate stdio` with it. */
async function stdioClientOf(folder: GatewayFolder, agent: string): Promise<Client> {
  const issued = await oncegate(folder, ['agents', 'add', agent]);
  expect(issued.code).toBe(0);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [LAUNCHER, 'stdio', '--config', folder.configFile],
    cwd: folder.dir,
    env: { ...(process.env as Record<string, string>), ONCEGATE_TOKEN: issued.stdout.trim() },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-e2e', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

describe('gateway end to end: stdio, cancellation, pending answers and tokens', () => {
  let target: DemoTargetProcess | undefined;
  let folder: GatewayFolder | undefined;
  let gateway: GatewayProcess | undefined;

  afterEach(async () => {
    await gateway?.stop();
    await target?.stop();
    folder?.dispose();
    gateway = target = folder = undefined;
  });

  it('given an agent token, when the official client speaks MCP over `oncegate stdio`, then calls are executions like over HTTP', async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url);
    const client = await stdioClientOf(folder, 'stdio-agent');
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toEqual(['get_build', 'set_config', 'send_payment', 'update_inventory', 'send_payout', 'execution_status']);
    expect(tools.tools.find((tool) => tool.name === 'send_payment')!.annotations).toMatchObject({ destructiveHint: true });
    const args = { name: 'over.stdio', value: '1' };
    const first = await client.callTool({ name: 'set_config', arguments: args });
    const again = await client.callTool({ name: 'set_config', arguments: args });
    // A later message on the same connection proves the first answers were read.
    await client.listTools();
    await client.close();
    expect(first.isError).toBe(false);
    expect(executionOf(again)).toMatchObject({ id: executionOf(first).id, attached: true });
    expect((await target.effects()).requestsTotal).toBe(1);
    const events = await readEventsOf(folder, executionOf(first).id);
    expect(events[0]).toBe('ExecutionAccepted');
    expect(events).toContain('ResultDelivered');
  });

  it('given an open `oncegate stdio` session, when its agent token is revoked, then the next call is refused and nothing is appended', async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url);
    const client = await stdioClientOf(folder, 'soon-revoked');
    try {
      const first = await client.callTool({ name: 'set_config', arguments: { name: 'before.revoke', value: '1' } });
      expect(first.isError).toBe(false);
      expect((await oncegate(folder, ['agents', 'revoke', 'soon-revoked'])).code).toBe(0);
      // What a call would append (a claim, an acceptance); the first answer's delivery record may still follow.
      const callEvents = async () =>
        (await readJournal(folder!.dataDir, ['execution-', 'intent-'])).filter((event) => event.type !== 'ResultDelivered').length;
      const journalBefore = await callEvents();

      const refused = await client.callTool({ name: 'set_config', arguments: { name: 'after.revoke', value: '2' } }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(McpError);
      expect((refused as McpError).code).toBe(-32001);
      expect((refused as McpError).message).toMatch(/token .*revoked/);
      expect(await callEvents()).toBe(journalBefore);
      expect((await target.effects()).requestsTotal).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('given a dispatched call, when the client cancels it, then the cancel is recorded as evidence and the request still completes once', async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url);
    gateway = await startGatewayProcess(folder);
    await target.control('hold', { match: 'PUT /config/:name' });
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const abort = new AbortController();
    const call = client
      .callTool({ name: 'set_config', arguments: { name: 'cancel.me', value: 'x' } }, undefined, { signal: abort.signal })
      .catch((error: unknown) => error);
    await eventually(async () => ((await target!.effects()).requestsTotal === 1 ? true : undefined));
    abort.abort('the agent changed its mind');
    expect(await call).toBeDefined();
    const [executionId] = await executionIds(folder.dataDir);
    await eventually(async () => ((await executionEvents(folder!.dataDir, executionId!)).includes('CancellationRequested') ? true : undefined));
    await target.control('release', { match: 'PUT /config/:name' });
    const events = await eventually(async () => {
      const types = await executionEvents(folder!.dataDir, executionId!);
      return types.includes('OutcomeObserved') ? types : undefined;
    });
    await client.close();
    expect(events.slice(0, 5)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'CancellationRequested', 'OutcomeObserved']);
    expect(events).not.toContain('ExecutionCancelled');
    expect((await target.effects()).total).toBe(1);
  });

  it('given a slow target, when the call wait passes, then the agent gets a pending answer and follows it with execution_status', async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url, { call_wait: '500ms' });
    gateway = await startGatewayProcess(folder);
    await target.control('hold', { match: 'PUT /config/:name' });
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const pending = await client.callTool({ name: 'set_config', arguments: { name: 'slow', value: 'x' } });
    expect(pending.isError).toBe(false);
    expect(executionOf(pending).state).toBe('dispatched');
    expect((pending.content as Array<{ text: string }>)[0]!.text).toMatch(/still in progress/);
    const id = executionOf(pending).id;

    await target.control('release', { match: 'PUT /config/:name' });
    const done = await eventually(async () => {
      const status = await client.callTool({ name: 'execution_status', arguments: { execution_id: id } });
      return executionOf(status).state === 'dispatched' ? undefined : status;
    });
    expect(executionOf(done)).toMatchObject({ id });
    expect((done.structuredContent as { response?: unknown }).response).toBeDefined();

    const other = await oncegate(folder, ['agents', 'add', 'someone-else']);
    const stranger = await connectClient(gateway.url, other.stdout.trim());
    const refused = await stranger.client.callTool({ name: 'execution_status', arguments: { execution_id: id } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).message).toMatch(/No execution .* of yours/);
    await stranger.client.close();
    await client.close();
  });

  it('given a revoked agent, when it calls again, then it gets 401', async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url);
    gateway = await startGatewayProcess(folder);
    const issued = await oncegate(folder, ['agents', 'add', 'short-lived']);
    const token = issued.stdout.trim();
    const { client } = await connectClient(gateway.url, token);
    await client.close();
    const listed = await oncegate(folder, ['agents', 'list']);
    expect(listed.stdout).toMatch(/agent:short-lived\t\S+\tissued \S+\tactive/);
    expect(listed.stdout).not.toContain(token);
    expect((await oncegate(folder, ['agents', 'revoke', 'short-lived'])).code).toBe(0);
    const initialize = () =>
      fetch(gateway!.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
      });
    // The running gateway follows the journal; the revocation takes effect within its polling interval.
    const refused = await eventually(async () => {
      const response = await initialize();
      await response.body?.cancel();
      return response.status === 401 ? response : undefined;
    }, 2_000, 'the revocation to take effect');
    expect(refused.status).toBe(401);
    expect((await oncegate(folder, ['agents', 'add', 'Bad Name'])).stderr).toMatch(/not a valid agent name/);
  });
});

async function readEventsOf(folder: GatewayFolder, executionId: string): Promise<string[]> {
  return eventually(async () => {
    const types = await executionEvents(join(folder.dir, 'data'), executionId);
    return types.includes('ResultDelivered') ? types : undefined;
  });
}
