import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive, mcpContractTools, startUpstreamProcess, stdioUpstreamCommand, UpstreamFolder, type McpContractTool, type UpstreamProcess } from '@oncegate/service-dispatcher-mcp/testing';
/* eslint-disable @nx/enforce-module-boundaries -- the gateway, its processes and the agent's client are the shared e2e harness */
import { startService, type ServiceProcess } from '../../../deploy/local';
import { CREDENTIAL_CANARY, gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../../../test/support/gateway-process';
import { eventually, readJournal } from '../../../test/support/journal';
import { connectClient } from '../../../test/support/mcp-clients';
import { executionOf, textOf } from '../../../test/support/scenario';
/* eslint-enable @nx/enforce-module-boundaries */

const MAIN = join(import.meta.dirname, '../../../dist/apps/dispatcher-mcp/main.js');

/**
 * The MCP channel as a service of its own beside `oncegate start`: the gateway's `dispatch_channels` leaves mcp out, and
 * `node dist/apps/dispatcher-mcp/main.js` on the same folder dispatches its calls. Killed with kill -9 while a payment is
 * at the upstream, it leaves the payment made once and the agent told the outcome is unknown, then held for review.
 */
describe.each(['http', 'stdio'] as const)('the mcp dispatcher as its own process beside the gateway, upstream over %s', (transport) => {
  let dir: string;
  let upstreamFolder: UpstreamFolder;
  let upstream: UpstreamProcess | undefined;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  let dispatcher: ServiceProcess;
  let client: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `oncegate-dispatcher-mcp-${transport}-`));
    upstreamFolder = new UpstreamFolder(dir);
    upstream = transport === 'http' ? await startUpstreamProcess({ dir, token: CREDENTIAL_CANARY }) : undefined;
    const reach = upstream !== undefined ? { url: upstream.url } : { command: stdioUpstreamCommand(dir) };
    const common = { upstream: 'ledger', reach, limits: '{ connect_timeout: 15s, response_timeout: 60s }', ...(upstream !== undefined ? { credentialRef: 'ledger-token' } : {}) };
    const tools: McpContractTool[] = [
      { ...common, name: 'ledger_set_limit', upstreamTool: 'set_limit', operationClass: 'idempotent_write' },
      { ...common, name: 'ledger_send_payment', upstreamTool: 'send_payment', operationClass: 'irreversible' },
    ];
    // The gateway hosts http and ssh only: the mcp channel is this file's process.
    folder = await gatewayFolder('http://127.0.0.1:9', { instance_lease: '2s', dispatch_channels: '[http, ssh]' }, upstream !== undefined ? [{ ref: 'ledger-token', kind: 'password', bind: [`127.0.0.1:${upstream.port}`] }] : []);
    appendFileSync(join(folder.dir, 'tools.yaml'), `${mcpContractTools(tools)}\n`);
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

  it('given a call of an upstream tool, then the gateway accepts it, the mcp process sends it, and the agent reads the upstream answer', async () => {
    const answer = await client.callTool({ name: 'ledger_set_limit', arguments: { account: `apart-${transport}`, cents: 250 } });

    expect(answer.isError ?? false).toBe(false);
    expect(textOf(answer)).toContain(`the limit of apart-${transport} is now 250 cents`);
    const { id } = executionOf(answer);
    const dispatched = (await readJournal(folder.journal)).find((event) => event.type === 'Dispatched' && event.metadata['executionId'] === id)!;
    // Sent by the mcp process itself (its instance), not by the gateway's own process.
    expect((dispatched.data as { dispatcherId: string }).dispatcherId).toMatch(new RegExp(`^dispatcher-mcp@.*/serve/${dispatcher.instance}$`));
    expect(dispatcher.output()).toContain('Oncegate dispatcher-mcp is running');
  });

  it('given the mcp process is killed -9 while a payment waits at the upstream, then no second payment is made, and the agent is told the outcome is unknown, then that it is held for review', async () => {
    const payment = { to: `killed-${transport}`, cents: 4_200 };
    // The upstream makes the payment and keeps its answer back: the attempt is in flight when the process dies.
    upstreamFolder.arm('withhold', 'send_payment');
    const first = client.callTool({ name: 'ledger_send_payment', arguments: payment });
    await eventually(() => (upstreamFolder.effectsOf('send_payment').some((effect) => effect.args['to'] === payment.to) ? true : undefined), 30_000, 'the payment at the upstream');
    const children = upstreamFolder.pids();

    await dispatcher.kill();
    // A stdio upstream sees its stdin close and ends: the killed channel leaves no child behind.
    if (transport === 'stdio') await eventually(() => (children.length > 0 && children.every((pid) => !alive(pid)) ? true : undefined), 15_000, 'the killed channel’s child to exit');
    dispatcher = await startService('dispatcher-mcp', { configFile: folder.configFile, cwd: folder.dir });

    // The sweeper finds the attempt's process gone once its lease lapsed: the outcome is unknown, and the waiting call says so.
    const told = await first;
    const { id } = executionOf(told);
    expect(executionOf(told).state).toBe('outcome_unknown');
    expect(textOf(told)).toMatch(/^Outcome unknown: the request to ledger_send_payment may have reached the target, and no answer came back \(dispatcher_lost\)\. Nothing was re-sent\./);

    const again = await client.callTool({ name: 'ledger_send_payment', arguments: payment });
    expect(executionOf(again)).toMatchObject({ id, state: 'needs_review', attached: true });
    expect(textOf(again)).toMatch(/^Held for review \(.*\): the outcome of ledger_send_payment is not known and the gateway will not send it again on its own\./);
    expect(upstreamFolder.effectsOf('send_payment').filter((effect) => effect.args['to'] === payment.to)).toHaveLength(1);
    const journal = await readJournal(folder.journal);
    expect(journal.filter((event) => event.type === 'Dispatched' && event.metadata['executionId'] === id)).toHaveLength(1);
    // The bearer token never reaches the journal nor any process's output.
    const written = JSON.stringify(journal) + gateway.output() + dispatcher.output();
    for (let length = 6; length <= CREDENTIAL_CANARY.length; length += 1) expect(written).not.toContain(CREDENTIAL_CANARY.slice(0, length));
  }, 120_000);

  it('given a url with a password in an mcp tool of the contract file, then the mcp process refuses to start and names the file, line and column', () => {
    const broken = join(folder.dir, 'broken-tools.yaml');
    const tool: McpContractTool = { name: 'ledger_set_limit', upstreamTool: 'set_limit', operationClass: 'idempotent_write', upstream: 'ledger', reach: { url: 'http://ops:hunter2@127.0.0.1:9/mcp' } };
    writeFileSync(broken, `version: 1\ntools:\n${mcpContractTools([tool])}\n`);
    const config = join(folder.dir, 'broken.yaml');
    writeFileSync(config, `data_dir: ${folder.dataDir}\ncontracts: ${broken}\ndev_token: true\n`);

    const run = spawnSync(process.execPath, [MAIN, '--config', config], { encoding: 'utf8', timeout: 30_000 });

    expect(run.status).toBe(1);
    expect(run.stderr).toContain('the contract file is invalid; nothing was started');
    expect(run.stderr).toMatch(/broken-tools\.yaml:\d+:\d+ tools\[0\]\.plugin\.url: the url holds a user name or password: keep the credential in the vault/);
    expect(run.stderr).not.toContain('hunter2');
  });
});
