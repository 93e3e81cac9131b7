import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIAL_CANARY, gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { executionOf } from '../support/scenario';

const LAUNCHER = fileURLToPath(new URL('../../bin/oncegate.mjs', import.meta.url));

/** What the API received: one entry per request, as it arrived. */
interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/**
 * A small API on loopback that serves its own OpenAPI 3.1 description at /openapi.yaml and implements four of its
 * operations: GET and PUT of a widget, POST of an order (which takes an Idempotency-Key), POST of a message
 * (which takes none). An order's answer can be held, as a slow API's would be.
 */
class WidgetsApi {
  readonly received: Received[] = [];
  private server!: Server;
  private holding = false;
  private held: ServerResponse[] = [];
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Holds the answers to orders from now on, until `release`. */
  hold(): void {
    this.holding = true;
  }

  release(): void {
    this.holding = false;
    for (const response of this.held.splice(0)) response.writeHead(201, { 'content-type': 'application/json' }).end('{"order":"placed"}');
  }

  document(): string {
    return `openapi: 3.1.0
info: { title: Widgets, version: "1.0" }
servers:
  - url: ${this.url}/v1
security:
  - widgetsToken: []
components:
  securitySchemes:
    widgetsToken: { type: http, scheme: bearer }
paths:
  /widgets/{id}:
    parameters:
      - { name: id, in: path, required: true, schema: { type: string } }
    get:
      operationId: getWidget
      summary: Read a widget.
      parameters:
        - { name: fields, in: query, required: true, schema: { type: string } }
        - { name: X-Trace-Id, in: header, schema: { type: string } }
      responses: { "200": { description: The widget. } }
    put:
      operationId: putWidget
      summary: Replace a widget.
      requestBody:
        required: true
        content:
          application/json:
            schema: { type: object, properties: { name: { type: string } }, required: [name] }
      responses: { "200": { description: Replaced. } }
  /orders:
    post:
      operationId: createOrder
      summary: Place an order.
      parameters:
        - { name: Idempotency-Key, in: header, required: true, schema: { type: string } }
      requestBody:
        required: true
        content:
          application/json:
            schema: { type: object, properties: { sku: { type: string }, quantity: { type: integer, minimum: 1 } }, required: [sku, quantity] }
      responses: { "201": { description: Placed. } }
  /messages:
    post:
      operationId: sendMessage
      summary: Send a message.
      parameters:
        - { name: channel, in: query, required: true, schema: { type: string } }
      requestBody:
        required: true
        content:
          application/json:
            schema: { type: object, properties: { text: { type: string } }, required: [text] }
      responses: { "202": { description: Sent. } }
`;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.url === '/openapi.yaml') {
      response.writeHead(200, { 'content-type': 'application/yaml' }).end(this.document());
      return;
    }
    this.received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
    const path = (request.url ?? '').split('?')[0] ?? '';
    if (request.method === 'POST' && path === '/v1/orders') {
      if (this.holding) this.held.push(response);
      else response.writeHead(201, { 'content-type': 'application/json' }).end('{"order":"placed"}');
      return;
    }
    const status = request.method === 'POST' ? 202 : 200;
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, path }));
  }
}

/** `oncegate <args>` as a user runs it (the compiled CLI), with no configuration. */
function oncegateCommand(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [LAUNCHER, ...args], { encoding: 'utf8' }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }));
  });
}

describe('gateway end to end: tools imported from an OpenAPI document', () => {
  const api = new WidgetsApi();
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  let imported: { code: number; stdout: string; stderr: string };
  let dir: string;
  let contracts: string;

  beforeAll(async () => {
    await api.start();
    dir = mkdtempSync(join(tmpdir(), 'oncegate-openapi-e2e-'));
    contracts = join(dir, 'widgets-tools.yaml');
    // Read from the API's own URL on loopback, as an organisation serves its descriptions.
    imported = await oncegateCommand(['contracts', 'import', 'openapi', `${api.url}/openapi.yaml`, '--out', contracts]);
    if (imported.code !== 0) throw new Error(`the import failed (${imported.code}): ${imported.stderr}`);
    // The credential stored as the import said to: its kind and binding from the command it printed.
    const command = /oncegate vault set widgetsToken --kind (\S+) --bind (\S+)/.exec(imported.stderr);
    if (command === null) throw new Error(`no vault command in: ${imported.stderr}`);
    folder = await gatewayFolder(api.url, { contracts }, [{ ref: 'widgetsToken', kind: command[1] as 'bearer', bind: [command[2]!] }]);
    gateway = await startGatewayProcess(folder);
  });

  afterAll(async () => {
    await gateway?.stop();
    await api.stop();
    folder?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const requestsTo = (method: string, path: string) => api.received.filter((request) => request.method === method && request.url.split('?')[0] === path);

  it('given the imported contract, when the gateway lists its tools, then each operation is a tool with the annotations of its class', async () => {
    expect(imported.stderr.split('\n')[0]).toBe(`${api.url}/openapi.yaml: 4 tools imported (read_only 1, idempotent_write 2, irreversible 1) into ${contracts}`);
    expect(imported.stderr).toContain(`oncegate vault set widgetsToken --kind bearer --bind 127.0.0.1:${new URL(api.url).port}`);
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const { tools } = await client.listTools();
    await client.close();
    const byName = new Map(tools.map((tool) => [tool.name, tool.annotations]));
    expect(byName.get('getWidget')).toMatchObject({ readOnlyHint: true });
    expect(byName.get('putWidget')).toMatchObject({ idempotentHint: true, destructiveHint: false });
    expect(byName.get('createOrder')).toMatchObject({ idempotentHint: true, destructiveHint: false });
    expect(byName.get('sendMessage')).toMatchObject({ destructiveHint: true });
  });

  it('given a GET, when called through the official MCP client, then the API gets the method, the encoded path, the query, the header and the credential', async () => {
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const result = await client.callTool({ name: 'getWidget', arguments: { id: 'w 1/x', fields: 'name,size', 'X-Trace-Id': 'trace-7' } });
    await client.close();
    expect(result.isError).toBe(false);
    const [request] = requestsTo('GET', '/v1/widgets/w%201%2Fx');
    expect(request).toMatchObject({ url: '/v1/widgets/w%201%2Fx?fields=name%2Csize', body: '' });
    expect(request!.headers['x-trace-id']).toBe('trace-7');
    expect(request!.headers['authorization']).toBe(`Bearer ${CREDENTIAL_CANARY}`);
  });

  it('given a PUT, when called, then the API gets the JSON body as the agent gave it', async () => {
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const result = await client.callTool({ name: 'putWidget', arguments: { id: 'w-2', body: { name: 'Bolt' } } });
    await client.close();
    expect(result.isError).toBe(false);
    const [request] = requestsTo('PUT', '/v1/widgets/w-2');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request!.body)).toEqual({ name: 'Bolt' });
  });

  it('given a POST with an Idempotency-Key parameter, when called, then the key the API gets is the execution id', async () => {
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const result = await client.callTool({ name: 'createOrder', arguments: { body: { sku: 'A-1', quantity: 2 } } });
    await client.close();
    expect(result.isError).toBe(false);
    const orders = requestsTo('POST', '/v1/orders').filter((request) => JSON.parse(request.body).sku === 'A-1');
    expect(orders).toHaveLength(1);
    expect(orders[0]!.headers['idempotency-key']).toBe(executionOf(result).id);
    expect(JSON.parse(orders[0]!.body)).toEqual({ sku: 'A-1', quantity: 2 });
  });

  it('given a POST without one, when called, then it is sent with its query and body and no Idempotency-Key', async () => {
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const result = await client.callTool({ name: 'sendMessage', arguments: { channel: 'ops', body: { text: 'deploy done' } } });
    await client.close();
    expect(result.isError).toBe(false);
    const [request] = requestsTo('POST', '/v1/messages');
    expect(request!.url).toBe('/v1/messages?channel=ops');
    expect(request!.headers['idempotency-key']).toBeUndefined();
    expect(JSON.parse(request!.body)).toEqual({ text: 'deploy done' });
  });

  it('given an order whose answer was lost with the connection, when the agent makes the same call again, then it is matched to the execution and not sent again', async () => {
    const run = { 'io.oncegate/run': 'run-openapi-retry' };
    const args = { body: { sku: 'B-7', quantity: 1 } };
    const ordersOfB7 = () => requestsTo('POST', '/v1/orders').filter((request) => JSON.parse(request.body).sku === 'B-7');
    api.hold();
    const drop = droppableFetch();
    const first = await connectClient(gateway.url, gateway.devToken, { fetch: drop.fetch });
    const lost = first.client.callTool({ name: 'createOrder', arguments: args, _meta: run }).catch((error: unknown) => error);
    await eventually(() => (ordersOfB7().length === 1 ? true : undefined), 10_000, 'the API to receive the order');
    drop.dropAll();
    await first.client.close();
    expect(await lost).toBeInstanceOf(Error);
    api.release();
    const key = ordersOfB7()[0]!.headers['idempotency-key'] as string;
    await eventually(async () => ((await executionEvents(folder.dataDir, key)).includes('ResultDeliveryFailed') ? true : undefined), 15_000, 'the lost answer to be recorded');

    const second = await connectClient(gateway.url, gateway.devToken);
    const retried = await second.client.callTool({ name: 'createOrder', arguments: args, _meta: run });
    await second.client.close();
    expect(executionOf(retried)).toMatchObject({ id: key, attached: true });
    expect(retried.isError).toBe(false);
    expect(ordersOfB7()).toHaveLength(1);
  });
});
