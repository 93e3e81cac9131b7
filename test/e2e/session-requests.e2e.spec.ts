import { describe, expect, it } from 'vitest';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { gatewayScenario } from '../support/scenario';

/** JSON-RPC messages of an SSE or JSON response body. */
async function messagesOf(response: Response): Promise<Array<{ id?: unknown; result?: { structuredContent?: { execution?: { id: string } } }; error?: { code: number; message: string } }>> {
  const text = await response.text();
  if (response.headers.get('content-type')?.includes('application/json')) return [JSON.parse(text)];
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 'data: '.length)
    .map((line) => JSON.parse(line.slice('data: '.length)));
}

describe('gateway end to end: request ids on one session', () => {
  const scenario = gatewayScenario();

  it('given a tools/call in flight, when a second request on the same session reuses its JSON-RPC id, then the second is refused and nothing is accepted for it, and the first gets its own answer', async () => {
    const { client, transport } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const post = (body: object) =>
      fetch(scenario.gateway.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${scenario.gateway.devToken}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId!,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify(body),
      });
    const call = (id: number, value: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'set_config', arguments: { name: 'same.id', value } } });
    await scenario.target.control('hold', { match: 'PUT /config/:name' });

    const first = post(call(7, 'first'));
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined), 10_000, 'the first write to arrive');
    const second = await post(call(7, 'second'));
    expect(second.status).toBe(409);
    expect(await messagesOf(second)).toEqual([
      { jsonrpc: '2.0', id: 7, error: { code: -32600, message: expect.stringMatching(/request id 7 is already in flight on this session.*Nothing was accepted/) } },
    ]);

    await scenario.target.control('release', { match: 'PUT /config/:name' });
    const answered = await messagesOf(await first);
    const [executionId] = await executionIds(scenario.folder.dataDir);
    expect(answered).toEqual([expect.objectContaining({ id: 7, result: expect.objectContaining({ isError: false }) })]);
    expect(answered[0]!.result!.structuredContent!.execution!.id).toBe(executionId);
    expect(await executionIds(scenario.folder.dataDir)).toHaveLength(1);
    expect((await scenario.target.effects()).requestsTotal).toBe(1);

    // The id is free again once its answer went out; a later request also proves the first answer was read.
    const reused = await messagesOf(await post({ jsonrpc: '2.0', id: 7, method: 'tools/list' }));
    expect(reused[0]).toMatchObject({ id: 7, result: { tools: expect.any(Array) } });
    await client.close();
    const events = await eventually(async () => {
      const types = await executionEvents(scenario.folder.dataDir, executionId!);
      return types.includes('ResultDelivered') ? types : undefined;
    });
    expect(events).not.toContain('ResultDeliveryFailed');
  });
});
