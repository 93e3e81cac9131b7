import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@oncegate/event-store';
import { oncegate, startGatewayProcess } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { gatewayScenario, executionOf } from '../support/scenario';

const payment = { payment_reference: 'order-20261201-0007', amount_cents: 990, card_token: 'tok_canary_pipeline' };

/** The execution's events and the claims committed with them, in store order. */
async function journalOf(dataDir: string, executionId: string): Promise<RecordedEvent[]> {
  const events = await readJournal(dataDir);
  return events.filter((event) => event.streamId === `execution-${executionId}` || (event.data as { executionId?: string }).executionId === executionId);
}

/** Whether the events sit at consecutive positions with one commit time: one commit of the store. */
function oneCommit(events: readonly RecordedEvent[]): boolean {
  return events.every((event, index) => index === 0 || (event.position === events[index - 1]!.position + 1 && event.recordedAt === events[0]!.recordedAt));
}

describe('gateway end to end: the pipeline accepts, authorizes and dispatches in one commit', () => {
  const scenario = gatewayScenario();

  it('given authorization and the HTTP dispatcher in the gateway process, when an agent calls a tool, then the claim, ExecutionAccepted, ExecutionAuthorized and Dispatched are one commit, each caused by the one before, and the outcome is the next', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const result = await client.callTool({ name: 'set_config', arguments: { name: 'replicas', value: '3' } });
    await client.close();
    const executionId = executionOf(result).id;
    expect(executionOf(result).state).toMatch(/^completed|delivered/);

    const events = await journalOf(scenario.folder.dataDir, executionId);
    const types = events.map((event) => event.type);
    expect(types.slice(0, 5)).toEqual(['IntentClaimed', 'ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
    const [claim, accepted, authorized, dispatched, observed] = events;
    expect(oneCommit([claim!, accepted!, authorized!, dispatched!])).toBe(true);
    expect(observed!.position).toBeGreaterThan(dispatched!.position);
    expect(authorized!.metadata).toMatchObject({ actor: 'service:authorization', causationId: accepted!.id });
    expect(dispatched!.metadata).toMatchObject({ actor: 'service:dispatcher-http', causationId: authorized!.id });
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });

  it('given a call that needs an approval, when it is accepted, then the chain stops at ApprovalRequested in the same commit, and the grant continues it from the subscriptions', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const call = client.callTool({ name: 'send_payout', arguments: { payment_reference: 'payout-20261201-01', amount_cents: 4200 } });
    const approval = await eventually(
      async () => (await readJournal(scenario.folder.dataDir, ['execution-'])).find((event) => event.type === 'ApprovalRequested'),
      10_000,
      'the approval request',
    );
    const executionId = approval.streamId.slice('execution-'.length);
    const before = await journalOf(scenario.folder.dataDir, executionId);
    expect(before.map((event) => event.type)).toEqual(['IntentClaimed', 'ExecutionAccepted', 'ApprovalRequested']);
    expect(oneCommit(before)).toBe(true);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);

    const approved = await oncegate(scenario.folder, ['approvals', 'approve', executionId, '--reason', 'invoice 7731 on file', '--by', 'user:alice']);
    expect(approved.code, approved.stderr).toBe(0);
    const result = await call;
    await client.close();
    expect(executionOf(result)).toMatchObject({ id: executionId, attached: false });
    const after = await journalOf(scenario.folder.dataDir, executionId);
    expect(after.map((event) => event.type).slice(3, 7)).toEqual(['ApprovalGranted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });
});

describe('gateway end to end: kill -9 between the accept-to-dispatch commit and the send', () => {
  const scenario = gatewayScenario({ testing: '{ hold_before_send: 30s }' });

  /** Starts the call, waits until its single commit is on disk and the send is held, then kills the gateway. */
  async function killAfterTheCommit(tool: string, args: Record<string, unknown>): Promise<string> {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    void client.callTool({ name: tool, arguments: args }).catch(() => undefined);
    const dispatched = await eventually(
      async () => (await readJournal(scenario.folder.dataDir)).find((event) => event.type === 'Dispatched'),
      10_000,
      'Dispatched on disk',
    );
    const executionId = dispatched.streamId.slice('execution-'.length);
    expect((await journalOf(scenario.folder.dataDir, executionId)).map((event) => event.type)).toEqual([
      'IntentClaimed',
      'ExecutionAccepted',
      'ExecutionAuthorized',
      'Dispatched',
    ]);
    await scenario.gateway.kill();
    await client.close().catch(() => undefined);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
    // The restarted gateway sends at once.
    writeFileSync(scenario.folder.configFile, readFileSync(scenario.folder.configFile, 'utf8').replace(/^testing: .*$/m, ''));
    scenario.gateway = await startGatewayProcess(scenario.folder);
    return executionId;
  }

  it('given an irreversible call killed after Dispatched was committed and before it was sent, when the gateway restarts and the agent retries, then it is held for review and nothing is ever sent', async () => {
    const executionId = await killAfterTheCommit('send_payment', payment);
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retry = await client.callTool({ name: 'send_payment', arguments: payment });
    await client.close();
    expect(executionOf(retry)).toMatchObject({ id: executionId, attached: true, state: 'needs_review', attempts: 1 });
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given an idempotent write killed after Dispatched was committed and before it was sent, when the gateway restarts and the agent retries, then it is sent once with the execution id as its key', async () => {
    const args = { name: 'replicas', value: '7' };
    const executionId = await killAfterTheCommit('set_config', args);
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retry = await client.callTool({ name: 'set_config', arguments: args });
    await client.close();
    expect(executionOf(retry)).toMatchObject({ id: executionId, attached: true, attempts: 2 });
    const effects = await scenario.target.effects();
    expect(effects.requests.map((request) => request.idempotencyKey)).toEqual([executionId]);
    expect(effects.total).toBe(1);
  });
});
