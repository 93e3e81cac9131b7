import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { everyFile } from '../support/files';
import { CREDENTIAL_CANARY, oncegate, startGatewayProcess, type GatewayFolder } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { executionOf, gatewayScenario, sharedGatewayScenario, textOf } from '../support/scenario';

const PAYOUT = { payment_reference: 'payout-000001', amount_cents: 1250 };
const DENIED_PAYOUT = { payment_reference: 'payout-000002', amount_cents: 1250 };
const LOCKED_PAYOUT = { payment_reference: 'payout-000003', amount_cents: 1250 };
const SENT_CREDENTIAL = createHash('sha256').update(`Bearer ${CREDENTIAL_CANARY}`).digest('hex');

interface Decided {
  readonly state: string;
  readonly denial?: { basis: string; reason: string };
  readonly approval?: { decision: string; scope: string; runId: string | null };
}

function decidedOf(result: unknown): Decided {
  return (result as { structuredContent: { execution: Decided } }).structuredContent.execution;
}

async function eventsOf(folder: GatewayFolder, executionId: string) {
  return readJournal(folder.dataDir, [`execution-${executionId}`]);
}

/** Waits until the execution's stream holds an event of `type`, and returns the stream. */
async function untilEvent(folder: GatewayFolder, executionId: string, type: string, timeoutMs = 15_000) {
  return eventually(
    async () => {
      const events = await eventsOf(folder, executionId);
      return events.some((event) => event.type === type) ? events : undefined;
    },
    timeoutMs,
    `${type} on ${executionId}`,
  );
}

function count(events: readonly { type: string }[], type: string): number {
  return events.filter((event) => event.type === type).length;
}

async function cli(folder: GatewayFolder, args: string[]): Promise<string> {
  const result = await oncegate(folder, args);
  expect(result.code, `oncegate ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.stdout;
}

function apiUrl(gatewayUrl: string, path: string): string {
  return new URL(path, gatewayUrl).toString();
}

describe('approvals: a per-use approval, asked once however often the agent retries', () => {
  // One gateway for the three tests (a world costs seconds to start): each asks approval for a payout of its own, and
  // the target's log starts empty for each.
  const scenario = sharedGatewayScenario({ call_wait: '1500ms' });
  beforeEach(() => scenario.target.control('reset-state'));

  it('given a disconnect while awaiting approval, when the agent retries and an approver approves over HTTP, then there is one request, one dispatch and one execution id', async () => {
    const drop = droppableFetch();
    const first = await connectClient(scenario.gateway.url, scenario.gateway.devToken, { fetch: drop.fetch });
    const lost = first.client.callTool({ name: 'send_payout', arguments: PAYOUT }).catch((error: unknown) => error);
    const executionId = await eventually(async () => {
      const requested = (await readJournal(scenario.folder.dataDir)).find((event) => event.type === 'ApprovalRequested');
      return requested?.metadata['executionId'] as string | undefined;
    });
    drop.dropAll();
    await first.client.close();
    expect(await lost).toBeInstanceOf(Error);

    const second = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retried = await second.client.callTool({ name: 'send_payout', arguments: PAYOUT });
    expect(executionOf(retried)).toMatchObject({ id: executionId, attached: true, state: 'awaiting_approval' });
    expect(retried.isError).toBe(false);
    expect(textOf(retried)).toMatch(/waiting for an approval.*Nothing has been sent/);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);

    const listed = await cli(scenario.folder, ['approvals', 'list']);
    expect(listed.split('\n').filter((line) => line.includes(executionId))).toHaveLength(1);

    const approver = (await cli(scenario.folder, ['approvers', 'add', 'alice'])).trim();
    const approved = await fetch(apiUrl(scenario.gateway.url, `/approvals/${executionId}/approve`), {
      method: 'POST',
      headers: { authorization: `Bearer ${approver}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'supplier invoice 4411 checked' }),
    });
    expect(approved.status).toBe(200);

    const events = await untilEvent(scenario.folder, executionId, 'OutcomeObserved');
    const third = await second.client.callTool({ name: 'send_payout', arguments: PAYOUT });
    await second.client.close();
    expect(executionOf(third)).toMatchObject({ id: executionId, attached: true });
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(third).state);

    expect(count(events, 'ApprovalRequested')).toBe(1);
    expect(count(events, 'Dispatched')).toBe(1);
    expect(events.find((event) => event.type === 'ApprovalGranted')?.data).toMatchObject({ by: 'approver:alice', reason: 'supplier invoice 4411 checked' });
    expect(events.find((event) => event.type === 'ExecutionAuthorized')?.data).toMatchObject({ basis: 'per_use_approval' });
    const payments = (await scenario.target.effects()).requests.filter((request) => request.endpoint === 'POST /payments');
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ idempotencyKey: executionId, authorizationSha256: SENT_CREDENTIAL });
  });

  it('given a pending approval, when an operator denies it with the CLI, then the call and every retry get that denial and nothing is sent', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const pending = await client.callTool({ name: 'send_payout', arguments: DENIED_PAYOUT });
    const executionId = executionOf(pending).id;
    expect(decidedOf(pending)).toMatchObject({ approval: { decision: 'pending', scope: 'execution' } });

    const shown = JSON.parse(await cli(scenario.folder, ['approvals', 'show', executionId, '--json'])) as Record<string, unknown>;
    expect(JSON.stringify(shown)).toContain('send_payout');
    expect(JSON.stringify(shown)).toContain('agent:dev');
    await cli(scenario.folder, ['approvals', 'deny', executionId, '--reason', 'no invoice on file', '--by', 'user:bob']);
    const denied = await untilEvent(scenario.folder, executionId, 'ExecutionDenied');
    expect(denied.at(-1)?.data).toMatchObject({ basis: 'approval_denied' });

    const retried = await client.callTool({ name: 'send_payout', arguments: DENIED_PAYOUT });
    await client.close();
    expect(executionOf(retried)).toMatchObject({ id: executionId, attached: true, state: 'denied' });
    expect(retried.isError).toBe(true);
    expect(textOf(retried)).toContain('no invoice on file');
    const again = await oncegate(scenario.folder, ['approvals', 'approve', executionId, '--reason', 'too late']);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/denied/);
    expect(count(await eventsOf(scenario.folder, executionId), 'ApprovalRequested')).toBe(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given a pending approval, when the vault is locked, then the request is invalidated, every new call is denied until it is unlocked', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const pending = await client.callTool({ name: 'send_payout', arguments: LOCKED_PAYOUT });
    const executionId = executionOf(pending).id;
    expect(executionOf(pending).state).toBe('awaiting_approval');

    await cli(scenario.folder, ['vault', 'lock', '--reason', 'incident 77']);
    const events = await untilEvent(scenario.folder, executionId, 'ExecutionDenied');
    expect(events.at(-1)?.data).toMatchObject({ basis: 'vault_locked' });

    const whileLocked = await client.callTool({ name: 'get_build', arguments: { build_id: '7' } });
    expect(whileLocked.isError).toBe(true);
    expect(decidedOf(whileLocked).denial).toMatchObject({ basis: 'vault_locked' });
    expect(textOf(whileLocked)).toMatch(/vault is locked/);

    // A retry of a denied call gets the same denial, so each probe is a new intent (another build id).
    const again = await client.callTool({ name: 'get_build', arguments: { build_id: '7' } });
    expect(executionOf(again)).toMatchObject({ id: executionOf(whileLocked).id, attached: true, state: 'denied' });

    await cli(scenario.folder, ['vault', 'unlock']);
    let probe = 100;
    const afterUnlock = await eventually(async () => {
      probe += 1;
      const result = await client.callTool({ name: 'get_build', arguments: { build_id: String(probe) } });
      return result.isError ? undefined : result;
    });
    await client.close();
    expect(executionOf(afterUnlock).state).toMatch(/completed|delivered/);
    expect((await scenario.target.effects()).requests.map((request) => request.path)).toEqual([`/builds/${probe}`]);
  });
});

describe('approvals: a vault locked and unlocked while the gateway was stopped', () => {
  const scenario = gatewayScenario({ call_wait: '500ms' });

  it('given a pending approval, when the vault is locked and unlocked while the gateway is down, then at start the request is denied as invalidated and cannot be approved', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const pending = await client.callTool({ name: 'send_payout', arguments: PAYOUT });
    await client.close();
    const executionId = executionOf(pending).id;
    await scenario.gateway.stop();
    await cli(scenario.folder, ['vault', 'lock', '--reason', 'key ceremony']);
    await cli(scenario.folder, ['vault', 'unlock']);
    scenario.gateway = await startGatewayProcess(scenario.folder);

    const events = await untilEvent(scenario.folder, executionId, 'ExecutionDenied');
    expect(events.at(-1)?.data).toMatchObject({ basis: 'approval_invalidated' });
    const late = await oncegate(scenario.folder, ['approvals', 'approve', executionId, '--reason', 'too late']);
    expect(late.code).not.toBe(0);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });
});

describe('approvals: an unanswered request times out', () => {
  const scenario = gatewayScenario({ call_wait: '500ms', authorization: "{ allow: { '*': ['*'] }, approval_timeout: 1s }" });

  it('given nobody decides, when the timeout passes, then the execution is denied with approval_timeout and a retry gets the same denial', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const pending = await client.callTool({ name: 'send_payout', arguments: PAYOUT });
    const executionId = executionOf(pending).id;
    const events = await untilEvent(scenario.folder, executionId, 'ExecutionDenied', 10_000);
    expect(events.at(-1)?.data).toMatchObject({ basis: 'approval_timeout' });
    const retried = await client.callTool({ name: 'send_payout', arguments: PAYOUT });
    await client.close();
    expect(executionOf(retried)).toMatchObject({ id: executionId, state: 'denied' });
    expect(decidedOf(retried).denial).toMatchObject({ basis: 'approval_timeout' });
    expect(count(await eventsOf(scenario.folder, executionId), 'ApprovalRequested')).toBe(1);
    expect((await oncegate(scenario.folder, ['approvals', 'list'])).stdout).not.toContain(executionId);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });
});

describe('session grants: a run asks once, then holds the grant until it ends', () => {
  const scenario = gatewayScenario({
    call_wait: '1500ms',
    authorization: [
      '',
      '  rules:',
      '    - { tools: [set_config], actors: [agent:dev], decision: run_grant }',
      "    - { tools: [get_build], actors: ['*'], decision: allow }",
    ].join('\n'),
  });

  it('given a policy that requires a run grant, when the run is granted, then later calls in the run pass on the grant, other runs ask again, and an ended run is denied', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const inRun = (run: string) => ({ 'io.oncegate/run': run });
    const first = await client.callTool({ name: 'set_config', arguments: { name: 'pool', value: '1' }, _meta: inRun('run-a') });
    const firstId = executionOf(first).id;
    expect(decidedOf(first)).toMatchObject({ state: 'awaiting_approval', approval: { scope: 'run', runId: 'agent:dev/run-a' } });
    await cli(scenario.folder, ['approvals', 'approve', firstId, '--reason', 'release 2026.11 window', '--by', 'user:carol']);
    const firstEvents = await untilEvent(scenario.folder, firstId, 'OutcomeObserved');
    expect(firstEvents.find((event) => event.type === 'ExecutionAuthorized')?.data).toMatchObject({ basis: 'session_grant' });

    const second = await client.callTool({ name: 'set_config', arguments: { name: 'pool', value: '2' }, _meta: inRun('run-a') });
    expect(second.isError).toBe(false);
    const secondEvents = await eventsOf(scenario.folder, executionOf(second).id);
    expect(count(secondEvents, 'ApprovalRequested')).toBe(0);
    expect(secondEvents.find((event) => event.type === 'ExecutionAuthorized')?.data).toMatchObject({ basis: 'session_grant' });

    const otherRun = await client.callTool({ name: 'set_config', arguments: { name: 'pool', value: '3' }, _meta: inRun('run-b') });
    expect(decidedOf(otherRun)).toMatchObject({ state: 'awaiting_approval', approval: { scope: 'run', runId: 'agent:dev/run-b' } });
    const alsoWaiting = await client.callTool({ name: 'set_config', arguments: { name: 'pool', value: '33' }, _meta: inRun('run-b') });
    expect(executionOf(alsoWaiting).state).toBe('awaiting_approval');
    // Granting run-b once lets both of its waiting calls through: the grant is the run's, not the request's.
    await cli(scenario.folder, ['approvals', 'approve', executionOf(otherRun).id, '--reason', 'run-b may write config']);
    const carried = await untilEvent(scenario.folder, executionOf(alsoWaiting).id, 'OutcomeObserved');
    expect(carried.find((event) => event.type === 'ApprovalGranted')?.data).toMatchObject({ by: 'service:authorization' });
    expect(carried.find((event) => event.type === 'ExecutionAuthorized')?.data).toMatchObject({ basis: 'session_grant' });

    const read = await client.callTool({ name: 'get_build', arguments: { build_id: '1' }, _meta: inRun('run-b') });
    expect(read.isError).toBe(false);
    const readEvents = await eventsOf(scenario.folder, executionOf(read).id);
    expect(readEvents.find((event) => event.type === 'ExecutionAuthorized')?.data).toMatchObject({ basis: 'policy' });

    const runs = await readJournal(scenario.folder.dataDir, ['run-']);
    const runA = `run-${encodeURIComponent('agent:dev/run-a')}`;
    expect(runs.filter((event) => event.streamId === runA).map((event) => event.type)).toEqual(['RunStarted', 'RunGranted']);
    expect(runs.find((event) => event.type === 'RunGranted')?.data).toMatchObject({ runId: 'agent:dev/run-a', tools: ['set_config'], by: 'user:carol' });
    const shown = await cli(scenario.folder, ['runs', 'show', 'agent:dev/run-a']);
    expect(shown).toContain('granted set_config');
    expect(shown).toContain(firstId);
    expect(await cli(scenario.folder, ['runs', 'list'])).toMatch(/agent:dev\/run-a\tagent:dev\tdeclared/);

    await cli(scenario.folder, ['runs', 'end', 'agent:dev/run-a', '--reason', 'agent finished']);
    const afterEnd = await client.callTool({ name: 'set_config', arguments: { name: 'pool', value: '4' }, _meta: inRun('run-a') });
    expect(afterEnd.isError).toBe(true);
    expect(decidedOf(afterEnd).denial).toMatchObject({ basis: 'policy' });
    expect(textOf(afterEnd)).toContain('has ended');

    const badRun = await client
      .callTool({ name: 'get_build', arguments: { build_id: '9' }, _meta: inRun('x'.repeat(300)) })
      .catch((error: unknown) => error as { code: number; message: string });
    expect(badRun).toMatchObject({ code: -32602, message: expect.stringMatching(/is not a run id/) });

    const outsider = (await cli(scenario.folder, ['agents', 'add', 'outsider'])).trim();
    const other = await connectClient(scenario.gateway.url, outsider);
    const refused = await other.client.callTool({ name: 'set_config', arguments: { name: 'pool', value: '5' }, _meta: inRun('run-c') });
    await other.client.close();
    await client.close();
    expect(decidedOf(refused).denial).toMatchObject({ basis: 'policy' });
    expect(textOf(refused)).toContain('no rule of the policy');
    expect((await scenario.target.effects()).requests.filter((request) => request.endpoint === 'PUT /config/:name')).toHaveLength(4);
  });
});

describe('session runs: a client that declares no run gets one per MCP session', () => {
  const scenario = gatewayScenario();

  it('given calls without a declared run, when the client closes its session, then the session run is recorded as started and ended', async () => {
    const { client, transport } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const read = await client.callTool({ name: 'get_build', arguments: { build_id: '5' } });
    const sessionId = transport.sessionId!;
    const runId = `session:${sessionId}`;
    const accepted = (await eventsOf(scenario.folder, executionOf(read).id)).find((event) => event.type === 'ExecutionAccepted');
    expect(accepted?.data).toMatchObject({ runId });
    await transport.terminateSession();
    await client.close();
    const run = await eventually(async () => {
      const events = await readJournal(scenario.folder.dataDir, [`run-${encodeURIComponent(runId)}`]);
      return events.some((event) => event.type === 'RunEnded') ? events : undefined;
    });
    expect(run.map((event) => event.type)).toEqual(['RunStarted', 'RunEnded']);
    expect(run[0]?.data).toMatchObject({ runId, actor: 'agent:dev', source: 'session' });
    expect(run[1]?.data).toMatchObject({ by: 'service:authorization', reason: 'the MCP session was closed' });
    expect(await cli(scenario.folder, ['runs', 'show', runId])).toContain('ended at');
  });
});

describe('credential bindings: a credential goes only where it is bound', () => {
  const scenario = gatewayScenario();

  it('given a credential bound to host A, when a contract sends it to host B, then the call is denied naming both and nothing is sent', async () => {
    const elsewhere = join(scenario.folder.dir, 'elsewhere.yaml');
    const port = new URL(scenario.target.url).port;
    writeFileSync(
      elsewhere,
      [
        'version: 1',
        'tools:',
        '  - name: set_config_elsewhere',
        '    description: The same endpoint under another host name.',
        '    class: idempotent_write',
        '    channel: http',
        '    target: demo/config',
        '    credential_ref: demo-writer',
        '    input_schema: { type: object, properties: { name: { type: string } }, required: [name], additionalProperties: false }',
        `    http: { method: PUT, url: "http://localhost:${port}/config/{{args.name}}", body: { value: "x" } }`,
        '    correlation_window: 1m',
      ].join('\n'),
    );
    await scenario.gateway.stop();
    writeFileSync(scenario.folder.configFile, readFileSync(scenario.folder.configFile, 'utf8').replace(/^contracts: .*$/m, `contracts: ${elsewhere}`));
    scenario.gateway = await startGatewayProcess(scenario.folder);

    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const result = await client.callTool({ name: 'set_config_elsewhere', arguments: { name: 'pool' } });
    await client.close();
    expect(result.isError).toBe(true);
    expect(decidedOf(result).denial).toMatchObject({ basis: 'credential_unresolved' });
    expect(textOf(result)).toContain("credential 'demo-writer' is bound to 127.0.0.1");
    expect(textOf(result)).toContain('localhost');
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });
});

describe('no credential value anywhere', () => {
  const scenario = gatewayScenario({ call_wait: '1500ms', log_level: 'verbose' });

  it('given credentials stored from stdin and from the environment and used in real calls, when every byte written by the gateway and the operator commands is read, then no value appears', async () => {
    const stdinCanary = 'stdin-canary-5e0b7c1d93';
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    // The harness stored demo-writer from the environment (CREDENTIAL_CANARY); use it once.
    const first = await client.callTool({ name: 'set_config', arguments: { name: 'first', value: 'on' } });
    expect(first.isError).toBe(false);

    // Replace it through the CLI, the value on stdin; the gateway takes the new version at the next dispatch.
    const port = new URL(scenario.target.url).port;
    const stored = await oncegate(scenario.folder, ['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', `127.0.0.1:${port}`], {}, `${stdinCanary}\n`);
    expect(stored.code, stored.stderr).toBe(0);
    const second = await eventually(async () => {
      const result = await client.callTool({ name: 'set_config', arguments: { name: 'second', value: String(Date.now()) } });
      const sent = (await scenario.target.effects()).requests.at(-1);
      return sent?.authorizationSha256 === createHash('sha256').update(`Bearer ${stdinCanary}`).digest('hex') ? result : undefined;
    });
    expect(second.isError).toBe(false);

    const payout = await client.callTool({ name: 'send_payout', arguments: PAYOUT });
    const payoutId = executionOf(payout).id;
    await cli(scenario.folder, ['approvals', 'approve', payoutId, '--reason', 'canary check']);
    await untilEvent(scenario.folder, payoutId, 'OutcomeObserved');
    await client.close();
    const [firstSent, ...laterSent] = (await scenario.target.effects()).requests.map((request) => request.authorizationSha256);
    expect(firstSent).toBe(SENT_CREDENTIAL);
    expect(new Set(laterSent)).toEqual(new Set([createHash('sha256').update(`Bearer ${stdinCanary}`).digest('hex')]));

    const outputs = [
      stored.stdout + stored.stderr,
      await cli(scenario.folder, ['vault', 'status', '--json']),
      await cli(scenario.folder, ['vault', 'status']),
      await cli(scenario.folder, ['approvals', 'show', payoutId, '--json']),
      await cli(scenario.folder, ['runs', 'list', '--json']),
      await cli(scenario.folder, ['investigate', payoutId, '--json']),
      await cli(scenario.folder, ['journal', 'export']),
      (await oncegate(scenario.folder, ['vault', 'set', 'demo-writer', '--kind', 'nonsense', '--bind', 'x'], {}, stdinCanary)).stderr,
    ];
    await scenario.gateway.stop();
    for (const canary of [CREDENTIAL_CANARY, stdinCanary]) {
      for (const output of [...outputs, scenario.gateway.output()]) expect(output).not.toContain(canary);
      for (const file of everyFile(scenario.folder.dir)) {
        expect(readFileSync(file).includes(Buffer.from(canary)), `${canary} in ${file}`).toBe(false);
      }
    }
    expect(scenario.gateway.output()).toMatch(/"context":"authorization".*(allow|ask) at rung/);
    // Nine operator commands, each a process of its own: about 10 s in all alone, three times that on a busy machine.
  }, 90_000);
});
