import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { connectClient } from '../support/mcp-clients';
import { executionOf, textOf } from '../support/scenario';

interface Denied {
  readonly state: string;
  readonly denial?: { basis: string; reason: string };
}

function decidedOf(result: unknown): Denied {
  return (result as { structuredContent: { execution: Denied } }).structuredContent.execution;
}

/**
 * A data folder where `oncegate init --dev` ran but `oncegate vault init` never did, with development mode off
 * (so the gateway makes no vault of its own): the gateway starts and says so, and only the tools that need a
 * credential are refused.
 */
describe('a gateway on a data folder without a vault', () => {
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: GatewayProcess | undefined;
  let token: string;

  beforeEach(async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url, { dev_token: 'false', authorization: '{ allow: { "*": ["agent:tester"] } }' }, [], { vault: false });
    const init = await oncegate(folder, ['init', '--dev']);
    expect(init.code, init.stderr).toBe(0);
    const added = await oncegate(folder, ['agents', 'add', 'tester']);
    expect(added.code, added.stderr).toBe(0);
    token = added.stdout.trim();
  });

  afterEach(async () => {
    await gateway?.stop();
    gateway = undefined;
    await target.stop();
    folder.dispose();
  });

  it('when it starts, then it logs that the vault is absent and which tools need one; a tool without a credential runs, one with a credential is denied (credential_unresolved) and nothing is sent', async () => {
    gateway = await startGatewayProcess(folder, {}, { devToken: false });
    expect(gateway.output()).toMatch(/no vault in this data folder.*set_config/);

    const { client } = await connectClient(gateway.url, token);
    try {
      const paid = await client.callTool({ name: 'send_payment', arguments: { payment_reference: 'pay-no-vault-1', amount_cents: 100, card_token: 'tok_visa_4242' } });
      expect(executionOf(paid).state).toBe('completed');
      expect((await target.effects()).byEndpoint['POST /payments']).toBe(1);

      const configured = await client.callTool({ name: 'set_config', arguments: { name: 'pool', value: 'on' } });
      expect(decidedOf(configured)).toMatchObject({
        state: 'denied',
        denial: { basis: 'credential_unresolved', reason: expect.stringMatching(/demo-writer.*no vault in this data folder.*oncegate vault init/) },
      });
      expect(textOf(configured)).toMatch(/Nothing was sent/);
      expect((await target.effects()).byEndpoint['PUT /config/:name'] ?? 0).toBe(0);
    } finally {
      await client.close();
    }
  });
});
