import { describe, expect, it } from 'vitest';
import { prefixesOf } from '../support/canaries';
import { CREDENTIAL_CANARY, oncegate } from '../support/gateway-process';
import { eventually, executionEvents, readJournal } from '../support/journal';
import { connectClient, connectModernClient, connectModernStdioClient, connectRevisionClient, droppableFetch } from '../support/mcp-clients';
import { executionOf, gatewayScenario, textOf } from '../support/scenario';

const PAYOUT = { payment_reference: 'payout-2026-0007', amount_cents: 4200 };
/** A secret argument (`send_payment`'s card_token) that no progress notification may hold, nor any prefix of it. */
const CARD_CANARY = 'card-canary-5be81a09c3';

/** The journal's events of one type, with their data. */
async function eventsOfType(dataDir: string, type: string): Promise<Array<{ data: Record<string, unknown>; metadata: Record<string, unknown> }>> {
  return (await readJournal(dataDir)).filter((event) => event.type === type) as never;
}

describe('MCP 2026-07-28 beside 2025-11-25 on one endpoint (official v1 and v2 clients)', () => {
  const scenario = gatewayScenario({ call_wait: '10s' });

  it('given a v2 client that negotiates, then it speaks 2026-07-28 without a session, and its call runs once with the execution in the answer', async () => {
    const client = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken);
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const listed = await client.listTools();
    expect(listed.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['set_config', 'send_payout', 'execution_status']));
    const answer = await client.callTool({ name: 'set_config', arguments: { name: 'modern.one', value: 'v' } });
    expect(executionOf(answer)).toMatchObject({ attached: false });
    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    const accepted = await eventsOfType(scenario.folder.dataDir, 'ExecutionAccepted');
    expect(accepted).toHaveLength(1);
    // No MCP session: the correlation names the request and the transport only, and no session was recorded.
    expect(accepted[0]!.data['correlation']).toMatchObject({ transport: 'streamable-http' });
    expect(accepted[0]!.data['correlation']).not.toHaveProperty('sessionId');
    expect(await eventsOfType(scenario.folder.dataDir, 'SessionStarted')).toEqual([]);
    const status = await client.callTool({ name: 'execution_status', arguments: { execution_id: executionOf(answer).id } });
    expect(executionOf(status).id).toBe(executionOf(answer).id);
    await client.close();

    // A 2025-11-25 client on the same endpoint still gets its session.
    const { client: legacy } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    expect((await legacy.callTool({ name: 'set_config', arguments: { name: 'legacy.one', value: 'v' } })).isError).toBeFalsy();
    await legacy.close();
    expect(await eventsOfType(scenario.folder.dataDir, 'SessionStarted')).toHaveLength(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(2);
  });

  it('given a v2 client over stdio, then it negotiates 2025-11-25 (the stdio command keeps its session-per-process revision) and its calls run as over HTTP', async () => {
    const client = await connectModernStdioClient(scenario.folder, scenario.gateway.devToken);
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const answer = await client.callTool({ name: 'set_config', arguments: { name: 'stdio.v2', value: 'v' } });
    await client.close();
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(answer).state);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
  });

  it('given the answer lost with its stream after Dispatched, when the v2 client re-issues the call under a new request id, then it attaches to the execution and there is one effect', async () => {
    const network = droppableFetch();
    const client = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken, { fetch: network.fetch });
    await scenario.target.control('hold', { match: 'PUT /config/modern.lost' });
    const lost = client.callTool({ name: 'set_config', arguments: { name: 'modern.lost', value: 'v' } }).catch((error: unknown) => error);
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined));
    network.dropAll();
    expect(await lost).toBeInstanceOf(Error);
    // The stream closed after Dispatched: the cancel is recorded as evidence and the execution goes on.
    const executionId = (await eventsOfType(scenario.folder.dataDir, 'ExecutionAccepted'))[0]!.metadata['executionId'] as string;
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId)).includes('CancellationRequested') ? true : undefined));
    const requested = await eventsOfType(scenario.folder.dataDir, 'CancellationRequested');
    expect(requested[0]!.data).toMatchObject({ trigger: 'response_stream_closed' });

    const again = client.callTool({ name: 'set_config', arguments: { name: 'modern.lost', value: 'v' } });
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId)).includes('RetryAttached') ? true : undefined));
    await scenario.target.control('release', { match: 'PUT /config/modern.lost' });
    const answer = await again;
    await client.close();
    expect(executionOf(answer)).toMatchObject({ id: executionId, attached: true });
    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    const events = await executionEvents(scenario.folder.dataDir, executionId);
    expect(events).not.toContain('ExecutionCancelled');
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
    const effects = await scenario.target.effects();
    expect(effects.requestsTotal).toBe(1);
    expect(effects.requests[0]!.idempotencyKey).toBe(executionId);
    // The two requests had different JSON-RPC ids: the match was by intent, not by id.
    const attached = await eventsOfType(scenario.folder.dataDir, 'RetryAttached');
    const first = (await eventsOfType(scenario.folder.dataDir, 'ExecutionAccepted'))[0]!.data['correlation'] as { jsonRpcId: unknown };
    expect((attached[0]!.data['correlation'] as { jsonRpcId: unknown }).jsonRpcId).not.toEqual(first.jsonRpcId);
  });

  it('given the only caller of a payout awaiting approval, when the v2 client closes its stream, then the execution is cancelled and nothing is sent', async () => {
    const client = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken);
    const abort = new AbortController();
    const call = client.callTool({ name: 'send_payout', arguments: PAYOUT }, { signal: abort.signal }).catch((error: unknown) => error);
    const executionId = await eventually(async () => (await eventsOfType(scenario.folder.dataDir, 'ApprovalRequested'))[0]?.metadata['executionId'] as string | undefined);
    abort.abort('the agent changed its mind');
    expect(await call).toBeInstanceOf(Error);
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId)).includes('ExecutionCancelled') ? true : undefined));
    expect((await eventsOfType(scenario.folder.dataDir, 'ExecutionCancelled'))[0]!.data).toMatchObject({ trigger: 'response_stream_closed' });
    const approved = await oncegate(scenario.folder, ['approvals', 'approve', executionId, '--reason', 'too late']);
    expect(approved.code).not.toBe(0);
    await client.close();
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it.each(['2026-07-28', '2025-11-25'] as const)('given a call waiting for approval on %s with a progress token, then the agent is told who is asked and until when, then that it was dispatched', async (revision) => {
    const progress: Array<{ progress: number; message?: string }> = [];
    const onprogress = (update: { progress: number; message?: string }) => void progress.push(update);
    const client = await connectRevisionClient(revision, scenario.gateway.url, scenario.gateway.devToken);
    const call = client.callTool({ name: 'send_payout', arguments: PAYOUT }, { onprogress, timeout: 30_000 });
    const executionId = await eventually(async () => (await eventsOfType(scenario.folder.dataDir, 'ApprovalRequested'))[0]?.metadata['executionId'] as string | undefined);
    await eventually(async () => (progress.some((update) => /awaiting approval/.test(update.message ?? '')) ? true : undefined));
    await scenario.target.control('hold', { match: 'POST /payments' });
    const approved = await oncegate(scenario.folder, ['approvals', 'approve', executionId, '--reason', 'supplier checked']);
    expect(approved.code, approved.stderr).toBe(0);
    await eventually(async () => (progress.some((update) => /dispatched/.test(update.message ?? '')) ? true : undefined));
    await scenario.target.control('release', { match: 'POST /payments' });
    const answer = await call;
    await client.close();

    expect(['completed', 'delivered']).toContain(executionOf(answer).state);
    const approval = progress.find((update) => /awaiting approval/.test(update.message ?? ''))!.message!;
    expect(approval).toContain(executionId);
    expect(approval).toMatch(/approver/);
    expect(approval).toMatch(/denied unless decided by \d{4}-\d\d-\d\dT/);
    // Counted up, one notification per step, in the order the steps came.
    expect(progress.map((update) => update.progress)).toEqual(progress.map((_, index) => index + 1));
    const steps = progress.map((update) => update.message ?? '');
    expect(steps.findIndex((message) => /awaiting approval/.test(message))).toBeLessThan(steps.findIndex((message) => /dispatched/.test(message)));
    expect(new Set(steps).size).toBe(steps.length);
    // The payout was sent with the canary credential: no progress message holds it, nor any prefix of it.
    for (const prefix of prefixesOf(CREDENTIAL_CANARY)) expect(JSON.stringify(progress).includes(prefix), prefix).toBe(false);
  });

  it.each(['2026-07-28', '2025-11-25'] as const)('given a call with a secret argument held at the target on %s, then its progress says it was dispatched and holds no part of the secret', async (revision) => {
    const progress: Array<{ progress: number; message?: string }> = [];
    const onprogress = (update: { progress: number; message?: string }) => void progress.push(update);
    await scenario.target.control('hold', { match: 'POST /payments' });
    const args = { payment_reference: `pay-progress-${revision}`, amount_cents: 700, card_token: CARD_CANARY };
    const client = await connectRevisionClient(revision, scenario.gateway.url, scenario.gateway.devToken);
    const call = client.callTool({ name: 'send_payment', arguments: args }, { onprogress, timeout: 30_000 });
    await eventually(async () => (progress.some((update) => /dispatched/.test(update.message ?? '')) ? true : undefined));
    await scenario.target.control('release', { match: 'POST /payments' });
    await call;
    await client.close();
    for (const prefix of prefixesOf(CARD_CANARY)) expect(JSON.stringify(progress).includes(prefix), prefix).toBe(false);
  });

  it('given no session on 2026-07-28, then a run is what the call declares (header or _meta), and a call that declares none belongs to no run', async () => {
    const headed = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken, { headers: { 'Oncegate-Run': 'deploy-42' } });
    await headed.callTool({ name: 'set_config', arguments: { name: 'run.header', value: 'v' } });
    await headed.close();
    const client = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken);
    await client.callTool({ name: 'set_config', arguments: { name: 'run.meta', value: 'v' }, _meta: { 'io.oncegate/run': 'deploy-43' } });
    await client.callTool({ name: 'set_config', arguments: { name: 'run.none', value: 'v' } });
    await client.close();
    const runs = (await eventsOfType(scenario.folder.dataDir, 'ExecutionAccepted')).map((event) => event.data['runId'] ?? null);
    expect(runs).toEqual(['agent:dev/deploy-42', 'agent:dev/deploy-43', null]);
  });

  it('given a malformed 2026-07-28 tools/call, then it is refused as invalid params and nothing is accepted', async () => {
    const client = await connectModernClient(scenario.gateway.url, scenario.gateway.devToken);
    const refused = await client.callTool({ name: 'set_config', arguments: { name: 'UPPER', value: 'v' } }).catch((error: unknown) => error);
    expect(String((refused as Error).message ?? textOf(refused))).toMatch(/Invalid arguments for 'set_config'/);
    const unknown = await client.callTool({ name: 'set_confg', arguments: {} }).catch((error: unknown) => error);
    expect(String((unknown as Error).message)).toMatch(/did you mean 'set_config'/);
    await client.close();
    expect(await eventsOfType(scenario.folder.dataDir, 'ExecutionAccepted')).toEqual([]);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });
});
