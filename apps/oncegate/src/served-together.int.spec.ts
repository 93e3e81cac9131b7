import { readdirSync, readlinkSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
/* eslint-disable @nx/enforce-module-boundaries -- a real target process and data folder, as the end-to-end suites use them */
import { startDemoTargetProcess, type DemoTargetProcess } from '../../../test/support/demo-target-process';
import { gatewayFolder, type GatewayFolder } from '../../../test/support/gateway-process';
import { readJournal } from '../../../test/support/journal';
import { callOnce } from '../../../test/support/mcp-clients';
/* eslint-enable @nx/enforce-module-boundaries */
import type { RecordedEvent } from '@oncegate/event-store';
import { loadGatewayConfig } from '@oncegate/host-config';
import { serveServices, type RunningService } from '@oncegate/service-host';
import { SERVICES } from './gateway';

/** The events of the one execution in the journal, in order. */
async function executionEvents(dataDir: string): Promise<RecordedEvent[]> {
  const events = await readJournal(dataDir, ['execution-']);
  expect(new Set(events.map((event) => event.streamId)).size).toBe(1);
  return events;
}

/** The files of a folder this process holds open (its descriptors, as Linux lists them). */
function openFilesUnder(folder: string): string[] {
  const open: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(folder)) open.push(target);
    } catch {
      // Closed between the listing and the look.
    }
  }
  return open;
}

/** The positions of the first event of each type named, in the execution's stream. */
function positionsOf(events: readonly RecordedEvent[], ...types: string[]): number[] {
  return types.map((type) => {
    const event = events.find((candidate) => candidate.type === type);
    expect(event, `${type} in ${events.map((candidate) => candidate.type).join(', ')}`).toBeDefined();
    return event!.position;
  });
}

describe('oncegate serve with several services in one process', () => {
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  const running: RunningService[] = [];

  beforeEach(async () => {
    target = await startDemoTargetProcess();
    folder = await gatewayFolder(target.url, { seal_every: '0s', instance_lease: '3s' });
  });

  afterEach(async () => {
    for (const service of running.splice(0).reverse()) await service.close();
    await target?.stop();
    folder?.dispose();
  });

  const serve = async (...names: string[]) => {
    const service = await serveServices(
      names.map((name) => SERVICES.get(name)!),
      loadGatewayConfig({ file: folder.configFile }),
      { logLevels: ['error'] },
    );
    running.push(service);
    return service;
  };

  const setConfig = async (gateway: RunningService, value: string) => {
    const answer = await callOnce({ url: gateway.url!, devToken: gateway.devToken! }, 'set_config', { name: 'feature.flag', value });
    expect(answer.isError, JSON.stringify(answer.content)).toBeFalsy();
  };

  it('given the gateway, authorization and the HTTP dispatcher named together, when a call comes, then its acceptance, authorization and dispatch are one commit and it is sent once', async () => {
    const together = await serve('dispatcher-http', 'gateway', 'result-delivery', 'authorization');
    expect(together.service).toBe('gateway+authorization+dispatcher-http+result-delivery');
    await setConfig(together, 'on');
    const events = await executionEvents(folder.dataDir);
    const [accepted, authorized, started] = positionsOf(events, 'ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched');
    // One commit: consecutive positions, one recording time.
    expect([authorized! - accepted!, started! - authorized!]).toEqual([1, 1]);
    const times = new Set(events.filter((event) => event.position >= accepted! && event.position <= started!).map((event) => event.recordedAt));
    expect(times.size).toBe(1);
    expect((await target.effects()).requestsTotal).toBe(1);
  });

  it('given the same services each on its own, when a call comes, then authorization and dispatch are commits of their own after the acceptance, and it is sent once', async () => {
    // The reference: without services beside it, the gateway's front only accepts; the others take the events from the store.
    const gateway = await serve('gateway');
    await serve('authorization');
    await serve('dispatcher-http');
    await serve('result-delivery');
    await setConfig(gateway, 'off');
    const events = await executionEvents(folder.dataDir);
    const [accepted, authorized, started] = positionsOf(events, 'ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched');
    const at = (position: number) => events.find((event) => event.position === position)!.recordedAt;
    expect(accepted).toBeLessThan(authorized!);
    expect(authorized).toBeLessThan(started!);
    // Each step was decided by its own service after it read the one before: three commits.
    expect(new Set([at(accepted!), at(authorized!), at(started!)]).size).toBeGreaterThan(1);
    expect((await target.effects()).requestsTotal).toBe(1);
  });

  it('given services served together, when the process closes them, then nothing of the data folder stays open: the vault they shared is closed too', async () => {
    const together = await serve('gateway', 'authorization', 'dispatcher-http');
    await setConfig(together, 'on');
    expect(openFilesUnder(folder.dataDir).length).toBeGreaterThan(0);
    await running.pop()!.close();
    expect(openFilesUnder(folder.dataDir)).toEqual([]);
  });
});
