import { describe, expect, it } from 'vitest';
import { jumpableClockEnv, jumpClock } from '../support/gateway-process';
import { eventually, executionEvents, executionIds, readJournal } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { gatewayScenario, executionOf } from '../support/scenario';

/** Every jump of the gateway's clock: past the 60 s grace an older gateway gave every class by default. */
const LATER_MS = 62_000;

/**
 * A fetch under which tools/call answers arrive at the client's process in full, but its MCP client never sees
 * them, as with a stalled agent; `arrived` resolves once an answer's bytes came in, `cancelSent` once the
 * gateway answered a cancel.
 */
function unreadAnswers(base: typeof fetch = fetch): { fetch: typeof fetch; arrived: Promise<void>; cancelSent: Promise<void> } {
  let arrivedNow!: () => void;
  const arrived = new Promise<void>((resolve) => (arrivedNow = resolve));
  let cancelSentNow!: () => void;
  const cancelSent = new Promise<void>((resolve) => (cancelSentNow = resolve));
  const unreadFetch: typeof fetch = async (input, init) => {
    const response = await base(input, init);
    if (typeof init?.body === 'string' && init.body.includes('"notifications/cancelled"')) cancelSentNow();
    if (typeof init?.body !== 'string' || !init.body.includes('"tools/call"') || response.body === null) return response;
    const bytes = response.body.getReader();
    void (async () => {
      let text = '';
      for (;;) {
        const { done, value } = await bytes.read();
        if (done) return;
        text += new TextDecoder().decode(value);
        if (text.includes('"result"')) arrivedNow();
      }
    })().catch(() => undefined);
    return new Response(new ReadableStream(), { status: response.status, headers: response.headers });
  };
  return { fetch: unreadFetch, arrived, cancelSent };
}

describe('gateway end to end: a written answer is not a delivered one', () => {
  const scenario = gatewayScenario({}, jumpableClockEnv(LATER_MS));

  const onlyExecution = async () => {
    const ids = await executionIds(scenario.folder.dataDir);
    expect(ids).toHaveLength(1);
    return ids[0]!;
  };

  it('given an irreversible payment whose answer reached the socket and the client gave up without reading it, when the same call comes 62 s later, then it attaches and the card was charged once', async () => {
    const payment = { payment_reference: 'order-unread-001', amount_cents: 4200, card_token: 'tok_unread_000001' };
    const unread = unreadAnswers();
    const stalled = await connectClient(scenario.gateway.url, scenario.gateway.devToken, { fetch: unread.fetch });
    const giveUp = new AbortController();
    const lost = stalled.client.callTool({ name: 'send_payment', arguments: payment }, undefined, { signal: giveUp.signal }).catch((error: unknown) => error);
    await unread.arrived;
    const executionId = await onlyExecution();
    giveUp.abort();
    expect(await lost).toBeInstanceOf(Error);
    await unread.cancelSent;
    await stalled.client.close();

    await jumpClock(scenario.gateway);
    const retrying = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retried = await retrying.client.callTool({ name: 'send_payment', arguments: payment });
    await retrying.client.close();

    expect(executionOf(retried)).toMatchObject({ id: executionId, attached: true });
    expect(retried.isError).toBe(false);
    expect(await executionIds(scenario.folder.dataDir)).toEqual([executionId]);
    expect((await scenario.target.effects()).requests.filter((r) => r.endpoint === 'POST /payments')).toHaveLength(1);
    // The cancel that came after the answer was written says the client gave up on it.
    const events = await executionEvents(scenario.folder.dataDir, executionId);
    expect(events).toContain('ResultDeliveryFailed');
    expect(events).not.toContain('ResultDelivered');
  });

  it('given an idempotent PUT whose answer reached the socket and the connection then dropped unread, when the same call comes 62 s later (past its 2 s grace), then it attaches and the target saw one PUT and one key', async () => {
    const args = { name: 'unread.answer', value: 'v1' };
    const drop = droppableFetch();
    const unread = unreadAnswers(drop.fetch);
    const stalled = await connectClient(scenario.gateway.url, scenario.gateway.devToken, { fetch: unread.fetch });
    void stalled.client.callTool({ name: 'set_config', arguments: args }).catch(() => undefined);
    await unread.arrived;
    const executionId = await onlyExecution();
    drop.dropAll();
    await stalled.client.close();

    await jumpClock(scenario.gateway);
    const retrying = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const retried = await retrying.client.callTool({ name: 'set_config', arguments: args });
    await retrying.client.close();

    expect(executionOf(retried)).toMatchObject({ id: executionId, attached: true, replayed: false });
    const puts = (await scenario.target.effects()).requests.filter((r) => r.endpoint === 'PUT /config/:name');
    expect(puts).toHaveLength(1);
    // Nothing proved receipt, so nothing says it was delivered.
    expect(await executionEvents(scenario.folder.dataDir, executionId)).not.toContain('ResultDelivered');
  });

  it('given a delivered answer, when a later request on the same session acknowledges it, then ResultDelivered names that evidence', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const first = executionOf(await client.callTool({ name: 'set_config', arguments: { name: 'acknowledged', value: 'v1' } }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await executionEvents(scenario.folder.dataDir, first.id)).not.toContain('ResultDelivered');
    await client.listTools();
    await client.close();
    const delivered = await eventually(async () => {
      const events = await readJournal(scenario.folder.dataDir, [`execution-${first.id}`]);
      return events.find((event) => event.type === 'ResultDelivered');
    });
    expect((delivered.data as { evidence: string }).evidence).toMatch(/a later tools\/list message on the same MCP session/);
  });
});
