import { readFileSync } from 'node:fs';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { everyFile } from '../support/files';
import { CREDENTIAL_CANARY } from '../support/gateway-process';
import { readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { gatewayScenario } from '../support/scenario';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function post(url: string, body: string, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });
}

/** Nothing that could dispatch: no execution stream and no intent claim. */
async function dispatchableEvents(dataDir: string) {
  return readJournal(dataDir, ['execution-', 'intent-', 'idempotency-']);
}

describe('gateway end to end: bad input gets a clear error and appends nothing that could dispatch', () => {
  const scenario = gatewayScenario();

  it('given no token or a bad token, when a request arrives, then it gets 401 and nothing is recorded', async () => {
    const before = (await readJournal(scenario.folder.dataDir)).length;
    const none = await post(scenario.gateway.url, JSON.stringify(INIT));
    const bad = await post(scenario.gateway.url, JSON.stringify(INIT), { authorization: 'Bearer ogt_not-a-real-token-at-all-000000000000000000' });
    expect(none.status).toBe(401);
    expect(bad.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/unknown or revoked token/);
    expect((await readJournal(scenario.folder.dataDir)).length).toBe(before);
  });

  it('given malformed JSON, an oversized body or a wrong session id, when posted, then each gets its HTTP and JSON-RPC error', async () => {
    const auth = { authorization: `Bearer ${scenario.gateway.devToken}` };
    const malformed = await post(scenario.gateway.url, '{"jsonrpc":"2.0","id":1,"method":', auth);
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: number } }).error.code).toBe(-32700);

    const huge = await post(scenario.gateway.url, JSON.stringify({ ...INIT, padding: 'x'.repeat(70 * 1024) }), auth);
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { error: { message: string } }).error.message).toMatch(/exceeds the limit of 65536 bytes/);

    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'set_config', arguments: { name: 'a', value: 'b' } } };
    const wrongSession = await post(scenario.gateway.url, JSON.stringify(call), {
      ...auth,
      'mcp-session-id': '00000000-0000-4000-8000-000000000000',
      'mcp-protocol-version': '2025-11-25',
    });
    expect(wrongSession.status).toBe(404);
    const noSession = await post(scenario.gateway.url, JSON.stringify(call), auth);
    expect(noSession.status).toBe(400);
    expect(await dispatchableEvents(scenario.folder.dataDir)).toEqual([]);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given an unknown tool or arguments that break the schema, when called, then it is an invalid-params error naming the problem', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const unknown = await client.callTool({ name: 'set_confg', arguments: { name: 'a', value: 'b' } }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(-32602);
    expect((unknown as McpError).message).toMatch(/Unknown tool 'set_confg' — did you mean 'set_config'\?/);

    const invalid = await client
      .callTool({ name: 'set_config', arguments: { name: 'Not Valid!', value: 'b', extra: true } })
      .catch((e: unknown) => e);
    expect((invalid as McpError).code).toBe(-32602);
    expect((invalid as McpError).message).toMatch(/Invalid arguments for 'set_config'/);
    expect((invalid as McpError).message).toMatch(/\/name/);
    await client.close();
    expect(await dispatchableEvents(scenario.folder.dataDir)).toEqual([]);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given real calls with a secret argument and a credential, when every byte the gateway wrote is read, then neither value appears', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const cardToken = 'tok_CANARY_ab12cd34ef';
    const withCredential = await client.callTool({ name: 'set_config', arguments: { name: 'with.credential', value: 'on' } });
    // Authorization denies a call whose credential does not resolve, so success proves the canary was sent.
    expect(withCredential.isError).toBe(false);
    await client.callTool({ name: 'send_payment', arguments: { payment_reference: 'canary-order-1', amount_cents: 10, card_token: cardToken } });
    await client.close();
    const sent = (await scenario.target.effects()).requests;
    expect(sent).toHaveLength(2);
    await scenario.gateway.stop();

    for (const file of everyFile(scenario.folder.dir)) {
      const bytes = readFileSync(file);
      expect(bytes.includes(Buffer.from(CREDENTIAL_CANARY)), file).toBe(false);
      expect(bytes.includes(Buffer.from(cardToken)), file).toBe(false);
    }
    expect(scenario.gateway.output()).not.toContain(CREDENTIAL_CANARY);
    expect(scenario.gateway.output()).not.toContain(cardToken);
  });
});
