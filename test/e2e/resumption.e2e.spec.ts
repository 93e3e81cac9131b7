import { describe, expect, it } from 'vitest';
import { startGatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient, droppableFetch, readSse, type SseEvent } from '../support/mcp-clients';
import { gatewayScenario, executionOf } from '../support/scenario';

/** A raw MCP session over fetch (no SDK client): every response as it came, for the stream's own events. */
async function rawSession(url: string, token: string, protocolVersion = '2025-11-25') {
  const headers = (extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...extra,
  });
  const initialized = await fetch(url, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  const sessionId = initialized.headers.get('mcp-session-id')!;
  await initialized.body?.cancel();
  const session = { 'mcp-session-id': sessionId, 'mcp-protocol-version': protocolVersion };
  await (await fetch(url, { method: 'POST', headers: headers(session), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).body?.cancel();
  return {
    sessionId,
    post: (body: object, extra: Record<string, string> = {}) => fetch(url, { method: 'POST', headers: headers({ ...session, ...extra }), body: JSON.stringify(body) }),
    resume: (lastEventId: string) => fetch(url, { method: 'GET', headers: headers({ ...session, 'last-event-id': lastEventId }) }),
  };
}

const getBuild = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_build', arguments: { build_id: String(id) } } });
const answerOf = (events: readonly SseEvent[], id: number) => events.find((event) => event.data !== '' && (JSON.parse(event.data) as { id?: unknown }).id === id);

describe('gateway end to end: SSE response streams start with a priming event and a retry interval', () => {
  const scenario = gatewayScenario();

  it('given a 2025-11-25 session, when a POST opens a response stream, then its first event has an id, retry 2000 and no data; also when the request names an older version', async () => {
    const raw = await rawSession(scenario.gateway.url, scenario.gateway.devToken);
    for (const version of ['2025-11-25', '2025-03-26']) {
      const events = await readSse(await raw.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': version }));
      expect(events[0]).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}\.\d+$/), retry: 2_000, data: '' });
      expect(JSON.parse(events[1]!.data)).toMatchObject({ id: 1, result: { tools: expect.any(Array) } });
    }
  });

  it('given a session of a client older than 2025-11-25, when a POST opens a response stream, then no priming event is sent (it could not read one)', async () => {
    const raw = await rawSession(scenario.gateway.url, scenario.gateway.devToken, '2025-06-18');
    const events = await readSse(await raw.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.data)).toMatchObject({ id: 1, result: { tools: expect.any(Array) } });
  });
});

describe('gateway end to end: resumption messages are kept for listen.resumption_retention', () => {
  const scenario = gatewayScenario({ 'listen.resumption_retention': '2s' });

  it('given a stream older than the retention, when its client resumes after a restart, then nothing is replayed and it is told so; a fresh stream still replays', async () => {
    const raw = await rawSession(scenario.gateway.url, scenario.gateway.devToken);
    const old = await readSse(await raw.post(getBuild(1)));
    expect(answerOf(old, 1)).toBeDefined();
    // Within the retention the stored answer is replayed after the priming event.
    const replayed = await readSse(await raw.resume(old[0]!.id!), (events) => answerOf(events, 1) !== undefined);
    expect(answerOf(replayed, 1)?.id).toBe(answerOf(old, 1)!.id);

    await scenario.gateway.stop();
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    scenario.gateway = await startGatewayProcess(scenario.folder);

    // Deleted at start, before the front listened: the stream cannot be resumed, and the client is told so.
    const gone = await raw.resume(old[0]!.id!);
    expect(gone.status).toBe(400);
    expect(((await gone.json()) as { error: { message: string } }).error.message).toMatch(
      /nothing is stored to resume stream [0-9a-f-]+ of this session \(messages are kept for listen\.resumption_retention\)/,
    );

    const fresh = await readSse(await raw.post(getBuild(2)));
    const again = await readSse(await raw.resume(fresh[0]!.id!), (events) => answerOf(events, 2) !== undefined);
    expect(answerOf(again, 2)?.id).toBe(answerOf(fresh, 2)!.id);
  });

  it('given a stream older than the retention, when its client resumes it in the same gateway process, then it is told so as after a restart, and a fresh stream still replays', async () => {
    const raw = await rawSession(scenario.gateway.url, scenario.gateway.devToken);
    const old = await readSse(await raw.post(getBuild(3)));
    expect(answerOf(old, 3)).toBeDefined();
    // Past the retention (2 s) and a sweep (every 0.5 s), with a new stream opened on the same session meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 2_800));
    const fresh = await readSse(await raw.post(getBuild(4)));

    const gone = await raw.resume(old[0]!.id!);
    expect(gone.status).toBe(400);
    expect(((await gone.json()) as { error: { message: string } }).error.message).toMatch(/nothing is stored to resume stream [0-9a-f-]+ of this session/);

    const again = await readSse(await raw.resume(fresh[0]!.id!), (events) => answerOf(events, 4) !== undefined);
    expect(answerOf(again, 4)?.id).toBe(answerOf(fresh, 4)!.id);
  });
});


describe('gateway end to end: a cut SSE stream resumes with Last-Event-ID', () => {
  const scenario = gatewayScenario();

  it('given the response stream is cut mid-call, when the client resumes, then it gets the result without a new dispatch', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken, {
      fetch: drop.fetch,
      reconnect: { initialDelayMs: 300, maxRetries: 5 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'resume.me', value: 'yes' } });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    const droppedAt = Date.now();
    drop.dropAll();
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    const result = await call;
    await client.close();
    // The stream's priming event said `retry: 2000` (listen.sse_retry), which the client follows instead of its own 300 ms.
    const resumedAt = drop.requests.find((r) => r.method === 'GET' && r.lastEventId !== null)!.at;
    expect(resumedAt - droppedAt).toBeGreaterThanOrEqual(1_900);

    const [executionId] = await executionIds(scenario.folder.dataDir);
    expect(executionOf(result)).toMatchObject({ id: executionId, attached: false });
    expect(result.isError).toBe(false);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    expect((await executionEvents(scenario.folder.dataDir, executionId!)).filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect(drop.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  });

  it('given the stream is cut and the gateway restarts, when the client resumes with Last-Event-ID, then the restored session replays the result', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    // The client reconnects after the gateway's `retry` (2 s), whatever its own delay says.
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken, {
      fetch: drop.fetch,
      reconnect: { initialDelayMs: 2_000, maxRetries: 6 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'across.restart', value: 'yes' } });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    // The client's network goes down with its stream and comes back only after the restart, so its resumption
    // reaches the new process however fast it reconnects.
    drop.disconnect();
    drop.dropAll();
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    const [executionId] = await executionIds(scenario.folder.dataDir);
    // The outcome arrives while the client is away; its response is kept for the resumption.
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId!)).includes('OutcomeObserved') ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await scenario.gateway.stop();
    scenario.gateway = await startGatewayProcess(scenario.folder);
    drop.reconnect();

    const result = await call;
    await client.close();
    expect(executionOf(result)).toMatchObject({ id: executionId });
    expect(result.isError).toBe(false);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    expect(scenario.gateway.output()).toMatch(/restored session/);
    expect(drop.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  });

  it('given a call in flight when the gateway is killed -9, when it restarts and the client resumes its stream, then the original call is answered with what became of it', async () => {
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const seen = droppableFetch();
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken, {
      fetch: seen.fetch,
      reconnect: { initialDelayMs: 1_000, maxRetries: 40 },
    });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'killed.mid.call', value: 'yes' } }, undefined, { timeout: 120_000 });
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the write to arrive');
    const [executionId] = await executionIds(scenario.folder.dataDir);
    await scenario.gateway.kill();
    // The target finishes the write; its answer has nowhere to go.
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    scenario.gateway = await startGatewayProcess(scenario.folder);

    const noAnswer = new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 30_000).unref());
    const result = await Promise.race([call, noAnswer]);
    await client.close();
    expect(result).not.toBe('no answer');
    // The gateway lost the attempt with the process: an unknown outcome, told as such, and nothing re-sent.
    expect(executionOf(result)).toMatchObject({ id: executionId, attached: false, state: 'outcome_unknown' });
    expect((await scenario.target.effects()).requestsTotal).toBe(1);
    expect(seen.requests.some((r) => r.method === 'GET' && r.lastEventId !== null)).toBe(true);
  }, 90_000);
});
