import { afterEach, beforeEach, describe, expect, it } from 'vitest';
/* eslint-disable @nx/enforce-module-boundaries -- a real target process and data folder, as the end-to-end suites use them */
import { startDemoTargetProcess, type DemoTargetProcess } from '../../../test/support/demo-target-process';
import { gatewayFolder, type GatewayFolder } from '../../../test/support/gateway-process';
import { eventually, readJournal } from '../../../test/support/journal';
/* eslint-enable @nx/enforce-module-boundaries */
import { loadGatewayConfig } from '@oncegate/host-config';
import { startGateway, type RunningGateway } from './gateway';

describe('a call whose client gave up before the call was accepted (in-process gateway)', () => {
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: RunningGateway;

  beforeEach(async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url, { seal_every: '0s' });
    gateway = await startGateway(loadGatewayConfig({ file: folder.configFile }), { logLevels: ['error'] });
  });

  afterEach(async () => {
    await gateway?.close();
    await target?.stop();
    folder?.dispose();
  });

  it('given the stream closed while the call was being accepted, when it is accepted, then that close still cancels it before anything is sent', async () => {
    // The abort comes before the execution exists: the call must still hear it once it does.
    const answer = await gateway.toolCalls
      .call('send_payout', { payment_reference: 'payout-early-close', amount_cents: 100 }, {
        actor: 'agent:dev',
        declaredRun: undefined,
        meta: {},
        correlation: { jsonRpcId: 1, transport: 'streamable-http' },
        signal: AbortSignal.abort(),
        cancelTrigger: 'response_stream_closed',
        delivery: undefined,
      })
      .catch((error: unknown) => error);
    expect(answer).not.toBeInstanceOf(Error);
    const cancelled = await eventually(async () => (await readJournal(gateway.dataDir)).find((event) => event.type === 'ExecutionCancelled'), 10_000, 'the cancel');
    expect(cancelled.data).toMatchObject({ trigger: 'response_stream_closed' });
    expect((await target.effects()).requestsTotal).toBe(0);
  });
});
