import { afterEach, beforeEach, describe, expect, it } from 'vitest';
/* eslint-disable @nx/enforce-module-boundaries -- a real target process, data folder and official client, as the end-to-end suites use them */
import { startDemoTargetProcess, type DemoTargetProcess } from '../../../test/support/demo-target-process';
import { freePort, gatewayFolder, type GatewayFolder } from '../../../test/support/gateway-process';
import { eventually, readJournal } from '../../../test/support/journal';
import { connectClient } from '../../../test/support/mcp-clients';
/* eslint-enable @nx/enforce-module-boundaries */
import { loadGatewayConfig } from '@oncegate/host-config';
import { startGateway, type RunningGateway } from './gateway';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

describe('MCP sessions held in memory by the HTTP front (in-process gateway, SQLite journal, official client)', () => {
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: RunningGateway;

  beforeEach(async () => {
    target = await startDemoTargetProcess();
    const port = await freePort();
    folder = await gatewayFolder(target.url, {
      listen: `{ host: 127.0.0.1, port: ${port}, path: /mcp, session_idle: 1s, sessions_per_agent: 2 }`,
      seal_every: '0s',
    });
    gateway = await startGateway(loadGatewayConfig({ file: folder.configFile }), { logLevels: ['error'] });
  });

  afterEach(async () => {
    await gateway?.close();
    await target?.stop();
    folder?.dispose();
  });

  const post = (body: unknown, accept = 'application/json, text/event-stream') =>
    fetch(gateway.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.devToken}`, 'content-type': 'application/json', accept },
      body: JSON.stringify(body),
    });

  it('given initializes the SDK refuses, when they arrive, then no session is kept in memory or recorded', async () => {
    for (let i = 0; i < 20; i += 1) {
      const notAcceptable = await post(INIT, 'application/json');
      expect(notAcceptable.status).toBe(406);
      await notAcceptable.body?.cancel();
      const twoInitializes = await post([INIT, { ...INIT, id: 2 }]);
      expect(twoInitializes.status).toBe(400);
      await twoInitializes.body?.cancel();
    }
    expect(gateway.liveSessions()).toBe(0);
    expect(await readJournal(gateway.dataDir, ['session-'])).toEqual([]);

    const accepted = await post(INIT);
    expect(accepted.status).toBe(200);
    await accepted.body?.cancel();
    expect(gateway.liveSessions()).toBe(1);
  });

  it('given a session idle past listen.session_idle, when it is let go, then its next call still works, restored from the journal', async () => {
    const { client } = await connectClient(gateway.url, gateway.devToken!);
    await client.listTools();
    expect(gateway.liveSessions()).toBe(1);

    await eventually(() => (gateway.liveSessions() === 0 ? true : undefined), 10_000, 'the idle session to be let go');

    const result = await client.callTool({ name: 'set_config', arguments: { name: 'after.idle', value: '1' } });
    expect(result.isError).toBe(false);
    expect(gateway.liveSessions()).toBe(1);
    expect((await target.effects()).requestsTotal).toBe(1);
    await client.close();
  });

  it('given more sessions than listen.sessions_per_agent, when a new one starts, then the least recently used is let go and still restorable', async () => {
    const first = await connectClient(gateway.url, gateway.devToken!);
    const second = await connectClient(gateway.url, gateway.devToken!);
    const third = await connectClient(gateway.url, gateway.devToken!);
    expect(gateway.liveSessions('agent:dev')).toBe(2);

    expect((await first.client.listTools()).tools.length).toBeGreaterThan(0);
    expect(gateway.liveSessions('agent:dev')).toBe(2);
    expect((await second.client.listTools()).tools.length).toBeGreaterThan(0);
    expect((await third.client.listTools()).tools.length).toBeGreaterThan(0);
    expect(gateway.liveSessions('agent:dev')).toBe(2);
    await Promise.all([first.client.close(), second.client.close(), third.client.close()]);
  });
});
