import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkContractFile } from '@oncegate/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importedFileText } from './contract-yaml';
import { CredentialOptionError, OpenApiDocumentError, ServerUrlError, UnknownSelectionError } from './import-errors';
import { importOpenApi, type OpenApiImport } from './import-openapi';
import { readOpenApiDocument } from './openapi-document';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const WORKSHOP = fixture('workshop-3.1.yaml');
const PETSTORE = fixture('petstore-3.0.yaml');

type Tool = Record<string, unknown> & { input_schema: Record<string, unknown> & { properties: Record<string, unknown> }; http: Record<string, unknown> };

function toolOf(result: OpenApiImport, name: string): { contract: Tool; notes: readonly string[] } {
  const tool = result.tools.find((candidate) => candidate.name === name);
  if (tool === undefined) throw new Error(`no tool ${name} among ${result.tools.map((t) => t.name).join(', ')}`);
  return { contract: tool.contract as Tool, notes: tool.notes };
}

describe('importing an OpenAPI 3.1 document (every rule of the mapping)', () => {
  let result: OpenApiImport;
  beforeAll(async () => {
    result = importOpenApi(await readOpenApiDocument(WORKSHOP));
  });

  it('given the document, when the file is written, then it passes the contract check and starts with where it came from', () => {
    const text = importedFileText(result);
    const checked = checkContractFile(text, 'workshop-tools.yaml');
    expect(checked.ok ? [] : checked.issues).toEqual([]);
    expect(result.tools.length).toBeGreaterThanOrEqual(20);
    expect(text.split('\n')[0]).toBe(`# Tool contracts imported from ${WORKSHOP} (Workshop API 2.4.0, OpenAPI 3.1.0) by oncegate contracts import openapi.`);
    expect(text).toMatch(/^# Meant to be edited: /m);
    // Each tool's notes stand above it as comments.
    expect(text).toContain("  # getSessionInfo: GET /session/info\n  # - cookie parameter 'session_hint' is not mapped: a contract sends no cookies\n");
  });

  it('given one operation, then one tool named after its operationId, described by its summary and description, at the first server with its variable defaults', () => {
    const { contract } = toolOf(result, 'listTools');
    expect(contract).toMatchObject({
      name: 'listTools',
      description: 'List the tools.\n\nNewest first.',
      class: 'read_only',
      channel: 'http',
      target: 'api.workshop.example/v2/tools',
      correlation_window: '30s',
    });
    expect(contract.http).toEqual({
      method: 'GET',
      url: 'https://api.workshop.example/v2/tools?limit={{args.limit}}&cursor={{args.cursor}}',
      headers: { 'X-Request-Id': '{{args.X-Request-Id}}' },
    });
    expect(result.notes).toContain('servers: the first, https://api.workshop.example/{version}, is used; ignored: https://sandbox.workshop.example/v2 (--server chooses another)');
  });

  it('given path, query and header parameters, then each is an argument by its name, required as the document says, additionalProperties false', () => {
    const { contract, notes } = toolOf(result, 'listTools');
    expect(contract.input_schema).toEqual({
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        cursor: { type: 'string', description: 'Where the previous page ended.' },
        'X-Request-Id': { type: 'string', format: 'uuid' },
      },
      additionalProperties: false,
    });
    // An optional query parameter without a default is sent empty when left out; one with a default never is.
    expect(notes).toEqual(["optional query parameter 'cursor': sent empty ('cursor=') when the agent leaves it out, as a contract's URL always holds its parameters"]);
    const getTool = toolOf(result, 'getTool').contract;
    expect(getTool.input_schema).toEqual({ type: 'object', properties: { toolId: { type: 'string', pattern: '^[a-z0-9-]{3,40}$' } }, required: ['toolId'], additionalProperties: false });
    expect(getTool.http['url']).toBe('https://api.workshop.example/v2/tools/{{args.toolId}}');
  });

  it('given the JSON request body, then it is the one argument body with its schema, sent whole; a JSON media type of its own is its Content-Type', () => {
    const replace = toolOf(result, 'replaceTool');
    expect(replace.contract.input_schema.properties['body']).toEqual({
      description: 'The whole tool.',
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1, examples: ['Torque wrench'] }, size_mm: { type: 'integer', minimum: 1 }, homepage: { type: 'string' } },
    });
    expect(replace.contract.input_schema['required']).toEqual(['toolId', 'body']);
    expect(replace.contract.http).toEqual({ method: 'PUT', url: 'https://api.workshop.example/v2/tools/{{args.toolId}}', body: '{{args.body}}' });
    expect(replace.notes).toEqual([
      "formats the contract does not check, left out of the schema: 'int32', 'uri-reference'",
      "read-only properties left out of the request body (the server sets them): 'id'",
    ]);
    const update = toolOf(result, 'updateTool').contract;
    expect(update.http).toEqual({
      method: 'PATCH',
      url: 'https://api.workshop.example/v2/tools/{{args.toolId}}',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: '{{args.body}}',
    });
    expect(update.input_schema['required']).toEqual(['toolId']);
  });

  it('given each method, then its class: GET and HEAD read only, PUT and DELETE idempotent, POST and PATCH irreversible, with their correlation windows', () => {
    const classOf = (name: string) => [toolOf(result, name).contract['class'], toolOf(result, name).contract['correlation_window']];
    expect(classOf('getTool')).toEqual(['read_only', '30s']);
    expect(classOf('checkTool')).toEqual(['read_only', '30s']);
    expect(classOf('replaceTool')).toEqual(['idempotent_write', '5m']);
    expect(classOf('deleteTool')).toEqual(['idempotent_write', '5m']);
    expect(classOf('updateTool')).toEqual(['irreversible', '1d']);
    expect(classOf('cancelOrder')).toEqual(['irreversible', '1d']);
    expect(toolOf(result, 'cancelOrder').contract.http).toEqual({ method: 'POST', url: 'https://api.workshop.example/v2/orders/{{args.orderId}}/cancel' });
  });

  it('given a POST with an Idempotency-Key header parameter (any case), then it is an idempotent write carrying the execution id there, not an argument', () => {
    const order = toolOf(result, 'createOrder').contract;
    expect(order['class']).toBe('idempotent_write');
    expect(order.http['idempotency_header']).toBe('Idempotency-Key');
    expect(Object.keys(order.input_schema.properties)).toEqual(['body']);
    const payment = toolOf(result, 'createPayment').contract;
    expect(payment['class']).toBe('idempotent_write');
    expect(payment.http['idempotency_header']).toBe('idempotency-key');
    expect(Object.keys(payment.input_schema.properties)).toEqual(['body']);
  });

  it('given name clashes between locations and with body, and names no argument can have, then they are resolved and listed', () => {
    const getOrder = toolOf(result, 'getOrder');
    expect(getOrder.contract.http['url']).toBe('https://api.workshop.example/v2/orders/{{args.id}}?id={{args.id_query}}');
    expect(Object.keys(getOrder.contract.input_schema.properties)).toEqual(['id', 'id_query']);
    expect(getOrder.notes).toContain("query parameter 'id' is argument 'id_query': 'id' is path parameter 'id'");
    const addNote = toolOf(result, 'addNote');
    expect(addNote.contract.http).toMatchObject({ url: 'https://api.workshop.example/v2/notes?body={{args.body_query}}', body: '{{args.body}}' });
    expect(addNote.contract.input_schema['required']).toEqual(['body_query', 'body']);
    expect(addNote.notes).toEqual(["query parameter 'body' is argument 'body_query': 'body' is the request body"]);
    const search = toolOf(result, 'searchTools');
    expect(search.contract.http['url']).toBe('https://api.workshop.example/v2/search?filter%5Bname%5D={{args.filter_name}}');
    expect(search.notes).toContain("query parameter 'filter[name]' is argument 'filter_name' (not a valid argument name as it is)");
  });

  it('given operationIds that are no valid or free tool name, or no operationId, then the tool is named from them or from method and path, and said', () => {
    expect(toolOf(result, 'tools_export').notes[0]).toBe("tool name 'tools_export': operationId 'tools.export' is not a valid tool name (letters, digits, _ and -, at most 64)");
    expect(toolOf(result, 'execution_status_2').notes[0]).toBe("tool name 'execution_status_2': operationId 'execution_status' is the name of the gateway's own tool");
    expect(toolOf(result, 'get_categories_categoryId_items').contract.http['url']).toBe('https://api.workshop.example/v2/categories/{{args.categoryId}}/items');
  });

  it('given parameter styles, cookies, reserved and credential headers a contract cannot write, then optional ones are listed at the tool and required ones keep the operation out', () => {
    expect(toolOf(result, 'searchTools').notes).toEqual([
      "query parameter 'tags' is not mapped: it is an array: a contract writes one value in the query, not a list or pairs",
      "query parameter 'fields' is not mapped: style 'deepObject' is not expressed by a contract, which writes one value as it is",
      "query parameter 'filter[name]' is argument 'filter_name' (not a valid argument name as it is)",
      "patterns left out (not valid regular expressions in Unicode mode, as the gateway compiles them): '^[\\w-\\.]+$'",
    ]);
    expect(toolOf(result, 'getTool').notes).toEqual(["header parameter 'X-Forwarded-For' is not mapped: the gateway derives 'X-Forwarded-For' itself, and a contract may not set it"]);
    expect(toolOf(result, 'getSessionInfo').notes).toEqual([
      "cookie parameter 'session_hint' is not mapped: a contract sends no cookies",
      "header parameter 'Accept' is left out: OpenAPI says to ignore it (the body's media type and the security scheme say it)",
      "header parameter 'X-Api-Token' is not mapped: it carries a credential, which a contract names by reference only; store it with oncegate vault set <ref> --kind header --header X-Api-Token --bind … and add credential_ref: <ref> to the tool",
      'the document marks this operation deprecated',
    ]);
    expect(toolOf(result, 'getSessionInfo').contract.input_schema.properties).toEqual({});
    expect(result.skipped).toEqual([
      { operation: { method: 'OPTIONS', path: '/tools', operationId: 'toolsOptions' }, reasons: ['OPTIONS is not a method a contract sends (GET, HEAD, POST, PUT, PATCH, DELETE)'] },
      {
        operation: { method: 'GET', path: '/reports/{reportId}', operationId: 'getReport' },
        reasons: ["query parameter 'columns' (required) is not mapped: it is an array: a contract writes one value in the query, not a list or pairs"],
      },
      {
        operation: { method: 'POST', path: '/uploads', operationId: 'uploadFile' },
        reasons: ['request body (required) is not mapped: it is multipart/form-data, and a contract sends JSON'],
      },
    ]);
  });

  it('given other body media types, callbacks and webhooks, then they are listed, never guessed', () => {
    const data = toolOf(result, 'sendImportData');
    expect(data.notes).toEqual(['request body: sent as application/json; also offered as text/csv, not mapped']);
    expect(data.contract.input_schema.properties['body']).toEqual({ type: 'array', items: { type: 'object', additionalProperties: { type: 'string' } } });
    expect(toolOf(result, 'subscribe').notes).toEqual(['callbacks (orderEvent) are not mapped: the gateway makes calls, it does not receive them']);
    expect(result.notes).toContain('webhooks (orderShipped) are not mapped: the gateway makes calls, it does not receive them');
  });

  it('given 3.1 schemas, then they are kept as JSON Schema: type lists, const, numeric exclusive bounds; oneOf kept, discriminator said; a recursive schema under $defs', () => {
    expect(toolOf(result, 'createPayment').contract.input_schema.properties['body']).toEqual({
      type: 'object',
      required: ['amount_cents', 'currency'],
      properties: { amount_cents: { type: 'integer', exclusiveMinimum: 0 }, currency: { const: 'EUR' }, reference: { type: ['string', 'null'], examples: ['INV-1'] } },
    });
    const order = toolOf(result, 'createOrder');
    expect((order.contract.input_schema.properties['body'] as { properties: { delivery: unknown } }).properties.delivery).toEqual({
      oneOf: [
        { type: 'object', required: ['kind'], properties: { kind: { const: 'pickup' }, store: { type: 'string' } } },
        { type: 'object', required: ['kind', 'address'], properties: { kind: { const: 'shipping' }, address: { type: 'string' } } },
      ],
    });
    expect(order.notes).toEqual(["'discriminator' left out: the oneOf/anyOf it annotates still decides which schema a value matches"]);
    const category = toolOf(result, 'putCategory').contract.input_schema;
    expect(category.properties['body']).toEqual({ $ref: '#/$defs/Category' });
    expect(category['$defs']).toEqual({
      Category: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Category' } } } },
    });
  });

  it('given security requirements, then each maps to a credential of the right vault kind, with the vault command bound to the server host', () => {
    expect(toolOf(result, 'listTools').contract['credential_ref']).toBe('bearerAuth');
    expect(toolOf(result, 'getMe').contract['credential_ref']).toBe('apiKeyHeader');
    expect(toolOf(result, 'getAudit').contract['credential_ref']).toBe('basicAuth');
    expect(toolOf(result, 'getAudit').notes).toEqual([
      "security scheme 'oauth' (oauth2) is not mapped: the gateway runs no OAuth 2.0 or OpenID Connect flow",
    ]);
    expect(toolOf(result, 'getHealth').contract['credential_ref']).toBeUndefined();
    expect(toolOf(result, 'getStats').contract['credential_ref']).toBeUndefined();
    expect(toolOf(result, 'getStats').notes).toEqual([
      "security scheme 'apiKeyQuery' (apiKey in query) is not mapped: an API key in the query: the gateway sends credentials in headers only (URLs are logged and recorded)",
      'no credential_ref: none of the security requirements maps to a vault credential, so calls go without one',
    ]);
    expect(result.credentials.map(({ ref, kind, header, bindings, command }) => ({ ref, kind, header, bindings, command }))).toEqual([
      { ref: 'bearerAuth', kind: 'bearer', header: undefined, bindings: ['api.workshop.example'], command: 'oncegate vault set bearerAuth --kind bearer --bind api.workshop.example' },
      {
        ref: 'apiKeyHeader',
        kind: 'header',
        header: 'X-Workshop-Key',
        bindings: ['api.workshop.example'],
        command: 'oncegate vault set apiKeyHeader --kind header --header X-Workshop-Key --bind api.workshop.example',
      },
      { ref: 'basicAuth', kind: 'basic', header: undefined, bindings: ['api.workshop.example'], command: 'oncegate vault set basicAuth --kind basic --username <user> --bind api.workshop.example' },
    ]);
    expect(importedFileText(result)).toContain('#   oncegate vault set bearerAuth --kind bearer --bind api.workshop.example\n');
  });

  it("given an operation's own servers, then its first is used and the others listed", () => {
    const status = toolOf(result, 'getStatus');
    expect(status.contract.http['url']).toBe('https://status.workshop.example/status');
    expect(status.notes).toEqual(['servers of the operation: the first, https://status.workshop.example, is used; ignored: https://status-backup.workshop.example']);
  });

  it('given --tag and --operation, then only those operations (both add up), in the document order; given --server and --credential, then they replace the document\'s', async () => {
    const read = await readOpenApiDocument(WORKSHOP);
    const chosen = importOpenApi(read, { tags: ['orders'], operations: ['getMe'], server: 'http://127.0.0.1:8790/api/' });
    expect(chosen.tools.map((tool) => tool.name)).toEqual(['createOrder', 'getOrder', 'cancelOrder', 'createPayment', 'addNote', 'getMe', 'subscribe']);
    expect(toolOf(chosen, 'getOrder').contract.http['url']).toBe('http://127.0.0.1:8790/api/orders/{{args.id}}?id={{args.id_query}}');
    // --server replaces the document's servers: the others are not listed as ignored.
    expect(chosen.notes).toEqual(['webhooks (orderShipped) are not mapped: the gateway makes calls, it does not receive them']);
    // A plain http server's binding names its port: without one, a binding means https on 443.
    expect(chosen.credentials.map((credential) => credential.command)).toEqual([
      'oncegate vault set bearerAuth --kind bearer --bind 127.0.0.1:8790',
      'oncegate vault set apiKeyHeader --kind header --header X-Workshop-Key --bind 127.0.0.1:8790',
    ]);
    // getMe is a header key, the others bearer: one --credential cannot be both kinds.
    expect(() => importOpenApi(read, { tags: ['orders'], operations: ['getMe'], credential: 'workshop-token' })).toThrow(CredentialOptionError);
    const orders = importOpenApi(read, { tags: ['orders'], server: 'http://127.0.0.1:8790/api', credential: 'workshop-token' });
    expect(new Set(orders.tools.map((tool) => tool.contract['credential_ref']))).toEqual(new Set(['workshop-token']));
    expect(orders.credentials.map((credential) => credential.command)).toEqual(['oncegate vault set workshop-token --kind bearer --bind 127.0.0.1:8790']);
  });

  it('given --credential and operations with no scheme the vault can hold, then it is said that no tool names it', async () => {
    const read = await readOpenApiDocument(WORKSHOP);
    const result = importOpenApi(read, { operations: ['getHealth', 'getStats'], credential: 'stats-key' });
    expect(result.tools.map((tool) => tool.contract['credential_ref'])).toEqual([undefined, undefined]);
    expect(result.notes).toContain('--credential stats-key is named by no tool: none of the operations imported has a security scheme the vault can hold');
    expect(result.credentials).toEqual([]);
  });

  it('given an unknown tag or operationId, then the error lists the known ones with the closest', async () => {
    const read = await readOpenApiDocument(WORKSHOP);
    const tagError = (() => {
      try {
        importOpenApi(read, { tags: ['order'] });
      } catch (error) {
        return error;
      }
    })();
    expect(tagError).toBeInstanceOf(UnknownSelectionError);
    expect((tagError as Error).message).toBe("unknown tag 'order' (did you mean 'orders'?); the document's tags: tools, orders, admin, unused");
    expect(() => importOpenApi(read, { operations: ['getToll', 'nothingLikeIt'] })).toThrow(/^unknown operationIds 'getToll' \(did you mean 'getTool'\?\), 'nothingLikeIt'; the document's operationIds: listTools, toolsOptions, /);
  });

  it('given --server or --credential that are no URL or reference, then the error says what they must be without repeating a credential', async () => {
    const read = await readOpenApiDocument(WORKSHOP);
    expect(() => importOpenApi(read, { server: 'api.example.com' })).toThrow(new ServerUrlError('--server is not a URL; write it as https://host[:port][/path]'));
    expect(() => importOpenApi(read, { server: 'https://user:hunter2@api.example.com' })).toThrow(/^--server holds a user name or password; credentials come from the vault, by reference$/);
    expect(() => importOpenApi(read, { credential: 'Bearer sk_live_0123456789abcdefghij' })).toThrow(/^--credential must name a credential/);
  });
});

describe('importing an OpenAPI 3.0 document (Petstore-like)', () => {
  let result: OpenApiImport;
  beforeAll(async () => {
    result = importOpenApi(await readOpenApiDocument(PETSTORE));
  });

  it('given the document, then the file passes the contract check', () => {
    const checked = checkContractFile(importedFileText(result), 'petstore-tools.yaml');
    expect(checked.ok ? [] : checked.issues).toEqual([]);
    expect(result.tools.map((tool) => tool.name)).toEqual([
      'updatePet',
      'addPet',
      'findPetsByStatus',
      'findPetsByTags',
      'getPetById',
      'updatePetWithForm',
      'deletePet',
      'uploadFile',
      'getInventory',
      'placeOrder',
      'getOrderById',
      'deleteOrder',
      'createUser',
      'loginUser',
      'getUserByName',
    ]);
  });

  it('given nullable, boolean exclusive bounds, example and read-only properties, then the body is JSON Schema 2020-12', () => {
    const order = toolOf(result, 'placeOrder');
    expect(order.contract.input_schema.properties['body']).toEqual({
      type: 'object',
      properties: {
        petId: { type: 'integer', examples: [198772] },
        quantity: { type: 'integer', examples: [7] },
        price: { type: 'number', exclusiveMinimum: 0 },
        shipDate: { type: ['string', 'null'], format: 'date-time' },
        status: { type: ['string', 'null'], description: 'Order Status', examples: ['approved'], enum: ['placed', 'approved', 'delivered', null] },
        complete: { type: 'boolean', default: false },
        note: { anyOf: [{ allOf: [{ type: 'object', properties: { text: { type: 'string', maxLength: 200 } } }] }, { type: 'null' }] },
      },
      required: ['petId'],
    });
    expect(order.notes).toEqual([
      "formats the contract does not check, left out of the schema: 'int64', 'int32'",
      "read-only properties left out of the request body (the server sets them): 'id'",
    ]);
    expect(toolOf(result, 'getOrderById').contract.input_schema.properties['orderId']).toEqual({ type: 'integer', minimum: 1, exclusiveMaximum: 10 });
  });

  it('given an apiKey in a header and oauth2, then the key is a header credential and oauth2 is listed', () => {
    expect(toolOf(result, 'getPetById').contract['credential_ref']).toBe('api_key');
    expect(toolOf(result, 'updatePet').contract['credential_ref']).toBeUndefined();
    expect(toolOf(result, 'addPet').contract['credential_ref']).toBe('api_key');
    expect(result.credentials.map((credential) => credential.command)).toEqual(['oncegate vault set api_key --kind header --header api_key --bind petstore.example.com']);
    expect(toolOf(result, 'deletePet').notes[0]).toMatch(/^header parameter 'api_key' is not mapped: it carries a credential/);
    expect(toolOf(result, 'loginUser').notes[0]).toBe("query parameter 'password' is not mapped: it carries a credential, and the gateway puts none in a URL (URLs are logged and recorded)");
  });

  it('given an optional body that is not JSON, then the tool is made without it and it is said', () => {
    const upload = toolOf(result, 'uploadFile');
    expect(upload.contract.http).toEqual({ method: 'POST', url: 'https://petstore.example.com/api/v3/pet/{{args.petId}}/uploadImage?additionalMetadata={{args.additionalMetadata}}' });
    expect(upload.notes[0]).toBe('request body is not mapped: it is application/octet-stream, and a contract sends JSON');
  });
});

describe('reading a document that is not one the import can use', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-openapi-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const problemsOf = async (text: string, name = 'api.yaml'): Promise<readonly string[]> => {
    const file = join(dir, name);
    writeFileSync(file, text);
    try {
      await readOpenApiDocument(file);
    } catch (error) {
      if (error instanceof OpenApiDocumentError) return error.problems;
      throw error;
    }
    throw new Error('the document was read');
  };

  it('given a document that breaks OpenAPI, then each problem is named with the excerpt that shows where', async () => {
    const problems = await problemsOf(`openapi: 3.1.0
info: { title: Broken }
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - { name: id, in: path, schema: { type: string } }
      responses: { "200": { description: ok } }
`);
    expect(problems[0]).toBe('not a valid OpenAPI document:');
    expect(problems.join('\n')).toMatch(/must have required property 'version'[\s\S]*"info": \{[\s\S]*version is missing here!/);
    expect(problems.join('\n')).toMatch(/must have required property 'required'[\s\S]*"operationId": "getItem"[\s\S]*required is missing here!/);
    expect(problems.at(-1)).toBe('(the excerpts show the document as JSON, its $refs resolved)');
  });

  it('given a $ref to nothing, YAML that does not parse, Swagger 2.0, OpenAPI 3.2 or a missing file, then each is said', async () => {
    expect(await problemsOf('openapi: 3.0.3\ninfo: { title: x, version: "1" }\npaths:\n  /a:\n    post:\n      requestBody: { content: { application/json: { schema: { $ref: "#/components/schemas/Missing" } } } }\n      responses: { "200": { description: ok } }\n')).toEqual([
      'not a valid OpenAPI document:',
      'Missing $ref pointer "#/components/schemas/Missing". Token "components" does not exist.',
    ]);
    expect((await problemsOf('openapi: 3.1.0\ninfo: [\n'))[0]).toMatch(/^Error parsing .*api\.yaml: .*\(\d+:\d+\)/);
    expect(await problemsOf('swagger: "2.0"\ninfo: { title: x, version: "1" }\npaths: {}\n')).toEqual([
      'a Swagger 2.0 document; the import reads OpenAPI 3.0 and 3.1 (convert it first, e.g. with swagger2openapi)',
    ]);
    expect(await problemsOf('openapi: 3.2.0\ninfo: { title: x, version: "1" }\npaths: {}\n')).toEqual(['OpenAPI 3.2.0; the import reads OpenAPI 3.0 and 3.1']);
    await expect(readOpenApiDocument(join(dir, 'absent.yaml'))).rejects.toThrow(/ENOENT/);
  });

  it('given a document whose server is relative or missing, then the import asks for --server; read from a URL, the server is taken relative to it', async () => {
    const text = 'openapi: 3.1.0\ninfo: { title: x, version: "1" }\nservers: [{ url: /api/v1 }]\npaths:\n  /ping:\n    get:\n      operationId: ping\n      responses: { "200": { description: ok } }\n';
    writeFileSync(join(dir, 'relative.yaml'), text);
    writeFileSync(join(dir, 'serverless.yaml'), text.replace('servers: [{ url: /api/v1 }]\n', ''));
    const serverless = await readOpenApiDocument(join(dir, 'serverless.yaml'));
    expect(() => importOpenApi(serverless)).toThrow(new ServerUrlError("the document names no server; give the API's absolute URL with --server https://…"));
    const fromFile = await readOpenApiDocument(join(dir, 'relative.yaml'));
    expect(() => importOpenApi(fromFile)).toThrow(new ServerUrlError("the document's server '/api/v1' is relative (to wherever the document is served); give the API's absolute URL with --server https://…"));

    const server = await serve((_request, response) => response.writeHead(200, { 'content-type': 'application/yaml' }).end(text));
    try {
      const fromUrl = await readOpenApiDocument(`${server.url}/docs/openapi.yaml?token=abc`);
      expect(fromUrl.source).toBe(`${server.url}/docs/openapi.yaml?…`);
      expect(toolOf(importOpenApi(fromUrl), 'ping').contract.http['url']).toBe(`${server.url}/api/v1/ping`);
    } finally {
      await server.close();
    }
  });

  it('given a URL that answers an error, holds a password, or refers to other files, then it is said without the credential', async () => {
    const server = await serve((request, response) => {
      if (request.url === '/split.yaml') {
        response.end('openapi: 3.1.0\ninfo: { title: x, version: "1" }\npaths:\n  /a:\n    get:\n      responses: { "200": { $ref: "common.yaml#/ok" } }\n');
        return;
      }
      response.writeHead(404).end();
    });
    try {
      await expect(readOpenApiDocument(`${server.url}/missing.yaml`)).rejects.toThrow(new OpenApiDocumentError(`${server.url}/missing.yaml`, ['cannot be fetched: the server answered HTTP 404']));
      const withPassword = readOpenApiDocument(server.url.replace('http://', 'http://me:s3cret-pass@') + '/split.yaml');
      await expect(withPassword).rejects.toThrow(/the URL holds a user name or password/);
      await expect(withPassword).rejects.not.toThrow(/s3cret/);
      await expect(readOpenApiDocument(`${server.url}/split.yaml`)).rejects.toThrow(/it refers to other files \(common\.yaml#\/ok\), which are not fetched for a document read from a URL/);
    } finally {
      await server.close();
    }
  });
});

/** A real HTTP server on loopback for the test's documents. */
async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
