import { chmodSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { describe, expect, it } from 'vitest';
import { everyFile } from '../support/files';
import { CREDENTIAL_CANARY, freePort, gatewayFolder, oncegate, startGatewayProcess, unprivilegedUser } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { gatewayScenario, sharedGatewayScenario } from '../support/scenario';

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

/** The one JSON-RPC message of a response, whether the gateway answered with JSON or an SSE stream. */
async function messageOf(response: Response): Promise<{ id?: unknown; result?: unknown; error?: { code: number; message: string } }> {
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 'data: '.length)
    .map((line) => JSON.parse(line.slice('data: '.length)));
  return data[data.length - 1];
}

/** An initialized session over raw HTTP: `send` posts one message on it and returns the answer. */
async function rawSession(url: string, token: string) {
  const auth = { authorization: `Bearer ${token}` };
  const init = await post(url, JSON.stringify(INIT), auth);
  const sessionId = init.headers.get('mcp-session-id')!;
  await init.text();
  const headers = { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
  await (await post(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers)).text();
  return {
    sessionId,
    send: async (message: unknown) => messageOf(await post(url, JSON.stringify(message), headers)),
    sendText: async (body: string) => messageOf(await post(url, body, headers)),
  };
}

/** Nothing that could dispatch: no execution stream and no intent claim. */
async function dispatchableEvents(dataDir: string) {
  return readJournal(dataDir, ['execution-', 'intent-', 'idempotency-']);
}

// Every request here is refused or changes nothing: one gateway for them all, and its journal and target must show
// nothing that could dispatch after every one of them.
describe('gateway end to end: bad input gets a clear error and appends nothing that could dispatch', () => {
  const scenario = sharedGatewayScenario();

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

  it('given malformed tools/call params, when posted, then each is an invalid-params error with a message and nothing is accepted', async () => {
    const session = await rawSession(scenario.gateway.url, scenario.gateway.devToken);
    const call = (params: unknown) => session.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params });
    const nameNotString = await call({ name: 42, arguments: { name: 'a', value: 'b' } });
    expect(nameNotString.error?.code).toBe(-32602);
    expect(nameNotString.error?.message).toMatch(/params\.name must be a string/);
    const argumentsNotObject = await call({ name: 'set_config', arguments: ['a', 'b'] });
    expect(argumentsNotObject.error?.code).toBe(-32602);
    expect(argumentsNotObject.error?.message).toMatch(/params\.arguments must be an object/);
    expect(`${nameNotString.error?.message}${argumentsNotObject.error?.message}`).not.toMatch(/invalid_type|"path"|expected/);
    expect(await dispatchableEvents(scenario.folder.dataDir)).toEqual([]);
  });

  it('given a lone UTF-16 surrogate in an argument, when called, then it is an invalid-params error naming where', async () => {
    const session = await rawSession(scenario.gateway.url, scenario.gateway.devToken);
    const answer = await session.sendText(
      '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"set_config","arguments":{"name":"a","value":"x\\ud800y"}}}',
    );
    expect(answer.error?.code).toBe(-32602);
    expect(answer.error?.message).toMatch(/\/value.*lone UTF-16 surrogate/);
    expect(await dispatchableEvents(scenario.folder.dataDir)).toEqual([]);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given arguments nested deeper than the limit, when called, then it is an invalid-params error naming the limit', async () => {
    const session = await rawSession(scenario.gateway.url, scenario.gateway.devToken);
    const deep = `${'['.repeat(2000)}${']'.repeat(2000)}`;
    const answer = await session.sendText(
      `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"set_config","arguments":{"name":"a","value":${deep}}}}`,
    );
    expect(answer.error?.code).toBe(-32602);
    expect(answer.error?.message).toMatch(/nested deeper than 64 levels/);
    expect(await dispatchableEvents(scenario.folder.dataDir)).toEqual([]);
  });

  it('given a top-level __proto__ argument, when called, then it is refused as an argument the schema does not allow', async () => {
    const session = await rawSession(scenario.gateway.url, scenario.gateway.devToken);
    const answer = await session.sendText(
      '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"set_config","arguments":{"name":"a","value":"b","__proto__":{"x":1}}}}',
    );
    expect(answer.error?.code).toBe(-32602);
    expect(answer.error?.message).toMatch(/__proto__/);
    expect(await dispatchableEvents(scenario.folder.dataDir)).toEqual([]);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
  });

  it('given an initialize whose protocolVersion is a number, when posted, then it is an invalid-params error about that field', async () => {
    const auth = { authorization: `Bearer ${scenario.gateway.devToken}` };
    const response = await post(scenario.gateway.url, JSON.stringify({ ...INIT, params: { ...INIT.params, protocolVersion: 20251125 } }), auth);
    expect(response.status).toBe(400);
    const answer = await messageOf(response);
    expect(answer.error?.code).toBe(-32602);
    expect(answer.error?.message).toMatch(/initialize: params\.protocolVersion must be a string/);
  });

  it('given the scheme written `bearer` in lower case, when a request arrives, then the token is accepted', async () => {
    const response = await post(scenario.gateway.url, JSON.stringify(INIT), { authorization: `bearer ${scenario.gateway.devToken}` });
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBeTruthy();
    await response.text();
  });

  it('given `Accept: */*`, when a client initializes, then it is served as accepting both JSON and SSE', async () => {
    const response = await post(scenario.gateway.url, JSON.stringify(INIT), {
      authorization: `Bearer ${scenario.gateway.devToken}`,
      accept: '*/*',
    });
    expect(response.status).toBe(200);
    expect((await messageOf(response)).result).toMatchObject({ serverInfo: { name: 'oncegate' } });
  });
});

describe('gateway end to end: no secret in anything the gateway writes', () => {
  const scenario = gatewayScenario();

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

describe('gateway start and journal export: a data folder the gateway cannot use is named with what to do', () => {
  const scenario = gatewayScenario();

  it('given a corrupted events.db, when the gateway starts, then it stops naming the file, the problem and what to do', async () => {
    await scenario.gateway.stop();
    writeFileSync(join(scenario.folder.dataDir, 'events.db'), Buffer.alloc(8192, 0x5a));
    const started = await oncegate(scenario.folder, ['start']);
    expect(started.code).toBe(1);
    expect(started.stderr).toContain(join(scenario.folder.dataDir, 'events.db'));
    expect(started.stderr).toMatch(/not a database|corrupt/);
    expect(started.stderr).toMatch(/restore it from a backup/);
    expect(started.stderr).not.toMatch(/\n\s+at /);
  });

  it('given a read-only events.db, when the gateway starts, then it stops naming the file and the permission to fix', async () => {
    await scenario.gateway.stop();
    const copy = join(scenario.folder.dir, 'read-only-data');
    // Copied while a connection is open, so the WAL's -shm comes along: SQLite then opens the file read-only
    // without a word, and only a write would tell.
    const open = openSqliteEventStore({ file: join(scenario.folder.dataDir, 'events.db') });
    await open.headPosition();
    cpSync(scenario.folder.dataDir, copy, { recursive: true });
    await open.close();
    for (const file of everyFile(copy)) chmodSync(file, 0o444);
    chmodSync(copy, 0o555);
    chmodSync(scenario.folder.dir, 0o755);
    try {
      const started = await oncegate(scenario.folder, ['start'], { ONCEGATE_DATA_DIR: copy }, undefined, unprivilegedUser());
      expect(started.code).toBe(1);
      expect(started.stderr).toContain(join(copy, 'events.db'));
      expect(started.stderr).toMatch(/read-only|cannot write/);
      expect(started.stderr).not.toMatch(/\n\s+at /);
    } finally {
      chmodSync(copy, 0o755);
    }
  });

  it('given a read-only copy of a data folder, when the journal is exported, then it is exported without writing', async () => {
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    await client.callTool({ name: 'set_config', arguments: { name: 'exported', value: '1' } });
    await client.close();
    await scenario.gateway.stop();
    const copy = join(scenario.folder.dir, 'read-only-copy');
    cpSync(scenario.folder.dataDir, copy, { recursive: true });
    for (const file of everyFile(copy)) chmodSync(file, 0o444);
    chmodSync(copy, 0o555);
    chmodSync(scenario.folder.dir, 0o755);
    try {
      const exported = await oncegate(scenario.folder, ['journal', 'export'], { ONCEGATE_DATA_DIR: copy }, undefined, unprivilegedUser());
      expect(exported.stderr).toMatch(/exported \d+ events/);
      expect(exported.code).toBe(0);
      expect(exported.stdout).toContain('ExecutionAccepted');
    } finally {
      chmodSync(copy, 0o755);
    }
  });
});

describe('gateway end to end: a start that cannot go on says why in a line', () => {
  it('given the demo target port taken, when the gateway starts, then it exits 1 naming the port and what to change, with no stack, and nothing listens', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    const folder = await gatewayFolder('http://127.0.0.1:9', { demo_target: `{ enabled: true, port: ${port} }` });
    try {
      const refused = await startGatewayProcess(folder).then(
        () => '',
        (error: Error) => error.message,
      );
      expect(refused).toMatch(/gateway exited with 1/);
      expect(refused).toContain(`the demo target did not start on port ${port}`);
      expect(refused).toMatch(/the port is taken\): set demo_target\.port, or turn the demo target off .*; nothing was started/);
      expect(refused).not.toMatch(/^\s+at /m);
      expect(refused).not.toMatch(/Node\.js v\d+/);
      // Nothing was started: the gateway's own port is free.
      const free = createServer();
      await new Promise<void>((resolve, reject) => free.once('error', reject).listen(folder.port, '127.0.0.1', resolve));
      await new Promise<void>((resolve) => free.close(() => resolve()));
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
      folder.dispose();
    }
  });
});

describe('gateway end to end: the demo target does not outlive its gateway', () => {
  it('given a gateway running its demo target, when the gateway is killed with -9, then the target stops and its port is free for the next start', async () => {
    const port = await freePort();
    const folder = await gatewayFolder('http://127.0.0.1:9', { demo_target: `{ enabled: true, port: ${port} }` });
    try {
      const gateway = await startGatewayProcess(folder);
      const effects = `http://127.0.0.1:${port}/effects`;
      expect((await fetch(effects)).status).toBe(200);
      await gateway.kill();
      // Nothing told the target; its stdin from the gateway ended with the gateway.
      await eventually(async () => ((await fetch(effects).then(() => false, () => true)) ? true : undefined), 10_000, 'the demo target to stop');
      const next = await startGatewayProcess(folder);
      expect((await fetch(effects)).status).toBe(200);
      await next.stop();
    } finally {
      folder.dispose();
    }
  });
});
