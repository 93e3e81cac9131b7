import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
/* eslint-disable @nx/enforce-module-boundaries -- a real target process, data folder and official client, as the end-to-end suites use them */
import { startDemoTargetProcess, type DemoTargetProcess } from '../../../test/support/demo-target-process';
import { fillDisk, freeDisk } from '../../../test/support/full-disk';
import { gatewayFolder, type GatewayFolder } from '../../../test/support/gateway-process';
import { readJournal } from '../../../test/support/journal';
import { connectClient } from '../../../test/support/mcp-clients';
/* eslint-enable @nx/enforce-module-boundaries */
import { loadGatewayConfig } from '@oncegate/host-config';
import { startGateway, type RunningGateway } from './gateway';

// The gateway's own SQLite connections, so the test can fill their files as a full disk would.
vi.mock('node:sqlite', async (original) => {
  // eslint-disable-next-line @nx/enforce-module-boundaries -- see above
  const { trackedSqlite } = await import('../../../test/support/full-disk');
  return trackedSqlite(await original());
});

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

describe('the gateway on a full disk (in-process gateway, SQLite files that cannot grow, official client)', () => {
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: RunningGateway;

  beforeEach(async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url, { seal_every: '0s' });
    gateway = await startGateway(loadGatewayConfig({ file: folder.configFile }), { logLevels: ['error'] });
  });

  afterEach(async () => {
    await freeDisk();
    await gateway?.close();
    await target?.stop();
    folder?.dispose();
  });

  it('given the journal cannot write, when agents keep working, then reads are served, writes get "storage unavailable", nothing is sent, and it recovers by itself', async () => {
    const { client } = await connectClient(gateway.url, gateway.devToken!);
    const first = await client.callTool({ name: 'set_config', arguments: { name: 'before.full', value: '1' } });
    expect(first.isError).toBe(false);
    const executionsBefore = (await readJournal(gateway.dataDir, ['execution-', 'intent-'])).length;

    await fillDisk();

    // A request that needs no journal write is still answered (a hang would end in the client's timeout).
    const listed = await client.listTools(undefined, { timeout: 5_000 });
    expect(listed.tools.map((tool) => tool.name)).toContain('set_config');

    const refused = await client
      .callTool({ name: 'set_config', arguments: { name: 'while.full', value: '2' } }, undefined, { timeout: 10_000 })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(-32012);
    expect((refused as McpError).message).toMatch(/Storage unavailable: .*nothing was sent/);
    expect((refused as McpError).message).not.toContain(gateway.dataDir);

    const initialize = await fetch(gateway.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.devToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(INIT),
    });
    expect(initialize.status).toBe(503);
    expect(((await initialize.json()) as { error: { message: string } }).error.message).toMatch(/^Storage unavailable/);
    expect(gateway.liveSessions()).toBe(1);

    expect((await target.effects()).requestsTotal).toBe(1);
    expect((await readJournal(gateway.dataDir, ['execution-', 'intent-'])).length).toBe(executionsBefore);

    await freeDisk();

    const again = await client.callTool({ name: 'set_config', arguments: { name: 'while.full', value: '2' } }, undefined, { timeout: 10_000 });
    expect(again.isError).toBe(false);
    expect((await target.effects()).requestsTotal).toBe(2);
    const second = await connectClient(gateway.url, gateway.devToken!);
    expect((await second.client.listTools()).tools.length).toBeGreaterThan(0);
    await second.client.close();
    await client.close();
  });
});
