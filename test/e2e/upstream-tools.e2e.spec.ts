import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, includeInContracts, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { executionEvents } from '../support/journal';
import { connectModernClient, type ModernClient } from '../support/mcp-clients';
import { executionOf } from '../support/scenario';

/**
 * An upstream MCP server put behind the gateway as an operator would: `oncegate upstream add` writes the contract file
 * of the demo target's ticket desk, the gateway's contract file includes it, and the gateway offers the desk's tools and
 * sends their calls on the mcp channel it hosts.
 */
describe('upstream tools behind the gateway (oncegate upstream add, include:, oncegate start)', () => {
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  let client: ModernClient;

  beforeAll(async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url, { call_wait: '2s' });
    const added = await oncegate(folder, ['upstream', 'add', 'desk', '--url', `${target.url}/mcp`, '--out', join(folder.dir, 'upstream-desk.yaml')]);
    expect(added.stderr).toBe('');
    expect(added.stdout).toContain('serve it: add   include: [upstream-desk.yaml]   to tools.yaml');
    includeInContracts(folder, 'upstream-desk.yaml');
    gateway = await startGatewayProcess(folder);
    client = await connectModernClient(gateway.url, gateway.devToken);
  });
  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
    await target?.stop();
    folder?.dispose();
  });

  it("given the included file, then the gateway lists the desk's tools with their schemas and the hints of their classes", async () => {
    const { tools } = await client.listTools();
    const desk = tools.filter((tool) => tool.name.startsWith('desk_'));
    expect(desk.map((tool) => [tool.name, tool.annotations?.readOnlyHint, tool.annotations?.idempotentHint, tool.annotations?.destructiveHint])).toEqual([
      ['desk_list_tickets', true, true, false],
      ['desk_set_ticket_priority', false, true, false],
      ['desk_close_ticket', false, false, true],
    ]);
    expect(desk[2]!.inputSchema).toMatchObject({ required: ['ticket_id', 'resolution'], properties: { ticket_id: { pattern: '^T-[0-9]+$' } } });
  });

  it('given a call of a desk tool, then the mcp channel sends it to the desk once, and the same call again is matched to that execution, not sent again', { timeout: 60_000 }, async () => {
    const args = { ticket_id: 'T-1', resolution: 'Paper path cleaned.' };
    const result = await client.callTool({ name: 'desk_close_ticket', arguments: args });
    const execution = executionOf(result);
    expect(['completed', 'delivered']).toContain(execution.state);
    expect(await executionEvents(folder.dataDir, execution.id)).toEqual(expect.arrayContaining(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']));
    const again = await client.callTool({ name: 'desk_close_ticket', arguments: args });
    expect(executionOf(again)).toMatchObject({ id: execution.id, attached: true });
    expect((await target.effects()).requests.filter((request) => request.method === 'MCP')).toHaveLength(1);
  });
});
