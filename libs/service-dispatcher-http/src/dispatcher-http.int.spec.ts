import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HttpDispatcher } from '@oncegate/channel-http';
import { parseContractFile, type ToolContract } from '@oncegate/contracts';
import { executionStream } from '@oncegate/domain';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { VaultService } from '@oncegate/host-vault';
import { initVault, lockVault, storeCredential, type VaultContext } from '@oncegate/vault';
import { acceptHttpCall, openHttpCallWorld, type HttpCallWorld } from './testing/http-call-world';
import { httpDispatcher } from './http-channel';

const MASTER = { ONCEGATE_MASTER_KEY: 'a master key for the dispatcher tests' };
const VALUE = 'dispatch-canary-3f81c6a2';

function setConfigTool(origin: string, credential = true): ToolContract {
  const text = `version: 1
tools:
  - name: set_config
    description: Set a named configuration entry.
    class: idempotent_write
    channel: http
    target: test/config
${credential ? '    credential_ref: demo-writer\n' : ''}    input_schema: { type: object, properties: { name: { type: string } }, required: [name], additionalProperties: false }
    http: { method: PUT, url: "${origin}/config/{{args.name}}", body: { value: "on" }, idempotency_header: Idempotency-Key }
    correlation_window: 1m
`;
  return parseContractFile(text, 'tools.yaml').tools[0]!;
}

/**
 * The HTTP dispatcher's preflight, given an execution already authorized: the vault is asked again at dispatch,
 * for the URL actually rendered, before `Dispatched` is written.
 */
describe('dispatcher-http preflight against the vault (SQLite store, loopback target)', () => {
  let world: HttpCallWorld;

  beforeEach(async () => {
    world = await openHttpCallWorld({ masterKey: MASTER.ONCEGATE_MASTER_KEY, credential: VALUE });
  });

  afterEach(async () => {
    await world.close();
  });

  /** Accepts and authorizes one call of `tool`, then hands its `ExecutionAuthorized` to a dispatcher. */
  async function dispatchAuthorized(tool: ToolContract, args: Record<string, unknown>, beforeDispatch: () => Promise<unknown> = async () => undefined) {
    const { store, sealed, http, vault } = world;
    const executionId = await acceptHttpCall(world, tool, args);
    await runExecutionCommand(store, executionId, () => ({ type: 'AuthorizeExecution', executionId, now: isoNow(systemClock), basis: 'policy' }), { actor: 'agent:test' }, systemClock);
    await beforeDispatch();
    const authorized = (await store.readStream(executionStream(executionId))).find((event) => event.type === 'ExecutionAuthorized')!;
    const controller = httpDispatcher({ store, tools: new Map([[tool.name, tool]]), sealed, http, vault, dispatcherId: 'dispatcher-http@test', clock: systemClock });
    await controller.onAuthorized(authorized);
    await controller.drain();
    return store.readStream(executionStream(executionId));
  }

  it('given an unlocked vault and a bound credential, when dispatched, then the request carries it and the outcome is recorded', async () => {
    const events = await dispatchAuthorized(setConfigTool(world.target.url), { name: 'pool' });
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
    expect(world.target.requests).toHaveLength(1);
    expect(world.target.requests[0]!.headers['authorization']).toBe(`Bearer ${VALUE}`);
    expect(JSON.stringify(events)).not.toContain(VALUE);
  });

  it('given the vault locked after authorization, when dispatched, then it is denied with vault_locked, no Dispatched and nothing sent', async () => {
    const events = await dispatchAuthorized(setConfigTool(world.target.url), { name: 'pool' }, () => lockVault(world.vaultContext(), 'incident 9'));
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'ExecutionDenied']);
    expect(events.at(-1)!.data).toMatchObject({ basis: 'vault_locked', reason: expect.stringContaining('incident 9') });
    expect(world.target.requests).toHaveLength(0);
  });

  it('given a tool that needs no credential, when the vault was locked after authorization, then it is denied with vault_locked and nothing is sent', async () => {
    const events = await dispatchAuthorized(setConfigTool(world.target.url, false), { name: 'pool' }, () => lockVault(world.vaultContext(), 'incident 10'));
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'ExecutionDenied']);
    expect(events.at(-1)!.data).toMatchObject({ basis: 'vault_locked', reason: expect.stringContaining('incident 10') });
    expect(world.target.requests).toHaveLength(0);
  });

  it('given a tool whose headers set Host from an argument (built without the contract checks), when dispatched, then no request leaves: the Host sent is always the bound URL authority', async () => {
    const tool = setConfigTool(world.target.url);
    if (tool.request.kind !== 'http') throw new Error('an HTTP tool');
    const forged: ToolContract = { ...tool, request: { ...tool.request, headers: { Host: '{{args.name}}.internal.example' } } };

    const events = await dispatchAuthorized(forged, { name: 'pool' });

    expect(world.target.requests).toHaveLength(0);
    // A definite failure: nothing was sent, so nothing is unknown.
    expect(events.at(-1)).toMatchObject({ type: 'OutcomeObserved', data: { outcome: 'failed' } });
  });

  it('given a URL outside the binding (another host name for the same server), when dispatched, then it is denied with credential_unresolved naming both and nothing is sent', async () => {
    const port = new URL(world.target.url).port;
    const events = await dispatchAuthorized(setConfigTool(`http://localhost:${port}`), { name: 'pool' });
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'ExecutionDenied']);
    expect(events.at(-1)!.data).toMatchObject({
      basis: 'credential_unresolved',
      reason: `credential 'demo-writer' is bound to 127.0.0.1:${port}/config, not localhost:${port}/config/pool`,
    });
    expect(world.target.requests).toHaveLength(0);
  });
});

/**
 * A target that echoes the credential after a padding the agent chose: whatever the cut `limits.response_bytes`
 * makes, no part of the credential reaches the agent, for every kind of HTTP credential the vault holds.
 */
describe('a target echoing the credential across limits.response_bytes (real vault, loopback target)', () => {
  const CAP = 256;
  const TAIL = ' was echoed back, and the answer goes on well past the cap.'.repeat(4);
  const CREDENTIALS = [
    { input: { ref: 'echo-bearer', kind: 'bearer' }, value: 'echo-bearer-token-5d2a91c7e4', header: 'authorization' },
    { input: { ref: 'echo-basic', kind: 'basic', username: 'svc' }, value: 'echo-basic-pass-7b13f0', header: 'authorization' },
    { input: { ref: 'echo-header', kind: 'header', header: 'X-Api-Key', scheme: 'Token' }, value: 'echo-header-key-c84e2b19', header: 'x-api-key' },
  ] as const;
  let dataDir: string;
  let store: SqliteEventStore;
  let vault: VaultService;
  let http: HttpDispatcher;
  let server: Server;
  let origin: string;

  /** What the target may echo of a credential header: the whole value, its last part, and a basic pair decoded. */
  function echoesOf(headerValue: string): string[] {
    const last = headerValue.split(' ').at(-1)!;
    const forms = [headerValue, last];
    if (headerValue.startsWith('Basic ')) {
      const pair = Buffer.from(last, 'base64').toString('utf8');
      forms.push(pair, pair.slice(pair.indexOf(':') + 1));
    }
    return forms;
  }

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'oncegate-echo-cap-'));
    store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
    http = new HttpDispatcher();
    // POST /echo/<header>/<form>: the padding from the body, then echo form <form> of header <header>, then more.
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const [, , header, form] = (request.url ?? '').split('/');
        const { pad } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { pad: string };
        const echo = echoesOf(String(request.headers[header!]))[Number(form)]!;
        response.writeHead(200, { 'content-type': 'text/plain' }).end(`${pad}${echo}${TAIL}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const context: VaultContext = { store, dataDir, env: MASTER, by: 'operator:test' };
    await initVault(context);
    for (const credential of CREDENTIALS) {
      await storeCredential(context, { ...credential.input, bindings: [`${new URL(origin).host}/echo`] }, credential.value);
    }
    vault = new VaultService({ store, dataDir, env: MASTER });
    await vault.start();
  });

  afterEach(async () => {
    await vault.stop();
    await http.close();
    await new Promise((resolve) => server.close(resolve));
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function echoTool(ref: string, header: string, form: number): ToolContract {
    const text = `version: 1
tools:
  - name: echo_back
    description: Send a padding that the target echoes with the credential.
    class: irreversible
    channel: http
    target: test/echo
    credential_ref: ${ref}
    input_schema: { type: object, properties: { pad: { type: string } }, required: [pad], additionalProperties: false }
    http: { method: POST, url: "${origin}/echo/${header}/${form}", body: { pad: "{{args.pad}}" } }
    limits: { response_bytes: ${CAP}, connect_timeout: 1s, response_timeout: 5s }
    correlation_window: 1m
`;
    return parseContractFile(text, 'tools.yaml').tools[0]!;
  }

  it.each(CREDENTIALS)(
    'given a $input.kind credential, when the cut falls after every prefix of every echoed form of it, then the agent gets the padding and "[redacted]" cut short, never a prefix of the credential',
    async ({ input, header }) => {
      const url = `${origin}/echo/${header}/0`;
      const forms = echoesOf(Object.values((await vault.httpCredential(input.ref, url)).headers)[0]!);
      for (const [form, echo] of forms.entries()) {
        for (let prefix = 1; prefix < echo.length; prefix += 1) {
          const pad = '.'.repeat(CAP - prefix);
          const result = await http.send({
            executionId: `ex_echo_${form}_${prefix}`,
            tool: echoTool(input.ref, header, form),
            arguments: { pad },
            credential: await vault.httpCredential(input.ref, url),
          });
          expect(result).toMatchObject({ kind: 'response', status: 200, truncated: true });
          const body = result.kind === 'response' ? Buffer.from(result.body) : Buffer.alloc(0);
          expect(body.length).toBeLessThanOrEqual(CAP);
          const text = body.toString('utf8');
          expect(text.startsWith(pad)).toBe(true);
          // What follows the padding is the start of the redaction and of the rest, never a piece of `echo`.
          const after = text.slice(pad.length);
          expect(`[redacted]${TAIL}`.startsWith(after), `echo form ${form} cut after ${prefix} characters left ${JSON.stringify(after)}`).toBe(true);
        }
      }
    },
  );
});
