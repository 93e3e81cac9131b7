import { afterEach, beforeEach, describe, expect, it, vi, type Mock } from 'vitest';
import { parseContractFile, type ToolContract } from '@oncegate/contracts';
import { executionIdFromUlid, executionStream, type ExecutionId } from '@oncegate/domain';
import { loadExecution, newUlid, systemClock } from '@oncegate/execution-journal';
import { storeCredential, vaultCrypto } from '@oncegate/vault';
import { AuthorizationController } from '@oncegate/service-authorization';
import { Policy } from '@oncegate/service-authorization';
import { httpDispatcher } from './http-channel';
import type { KitDispatcher } from '@oncegate/dispatcher-kit/host';
import { acceptHttpCall, openHttpCallWorld, type HttpCallWorld } from './testing/http-call-world';
import { PreparedCalls } from '@oncegate/service-host';

// Every rendering and every credential decryption of the process, whoever imports them, goes through these spies.
// The module file itself, not the package: the dispatcher's own rendering imports it from inside the library.
const rendering = vi.hoisted(() => ({ renderHttpRequest: undefined as unknown as Mock }));
vi.mock('../../channel-http/src/render-http-request', async (importOriginal) => {
  const original = await importOriginal<{ renderHttpRequest: (...args: unknown[]) => unknown }>();
  rendering.renderHttpRequest = vi.fn(original.renderHttpRequest);
  return { ...original, renderHttpRequest: rendering.renderHttpRequest };
});
vi.mock('../../vault/src/vault-crypto', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../vault/src/vault-crypto')>();
  return { ...original, open: vi.fn(original.open) };
});

const MASTER = { ONCEGATE_MASTER_KEY: 'a master key for the prepared-call tests' };
const VALUE = 'prepared-canary-9d41e7b2';

function setConfigTool(origin: string): ToolContract {
  const text = `version: 1
tools:
  - name: set_config
    description: Set a named configuration entry.
    class: idempotent_write
    channel: http
    target: test/config
    credential_ref: demo-writer
    input_schema: { type: object, properties: { name: { type: string }, value: { type: string } }, required: [name, value], additionalProperties: false }
    http: { method: PUT, url: "${origin}/config/{{args.name}}", body: { value: "{{args.value}}" }, idempotency_header: Idempotency-Key }
    correlation_window: 1m
`;
  return parseContractFile(text, 'tools.yaml').tools[0]!;
}

/**
 * One call through authorization and the HTTP dispatcher of one process: its arguments are opened once, its
 * request rendered once, the credential binding checked once and the credential decrypted once. With the
 * prepared calls forgotten in between (a restart, another process), everything is computed again and the same
 * request is sent.
 */
describe('a prepared call (authorization and the HTTP dispatcher, SQLite store, real vault, loopback target)', () => {
  let world: HttpCallWorld;
  let store: HttpCallWorld['store'];
  let sealed: HttpCallWorld['sealed'];
  let vault: HttpCallWorld['vault'];
  let target: HttpCallWorld['target'];
  let tool: ToolContract;
  let tools: ReadonlyMap<string, ToolContract>;
  let prepared: PreparedCalls;
  let authorization: AuthorizationController;
  let dispatcher: KitDispatcher;

  beforeEach(async () => {
    world = await openHttpCallWorld({ masterKey: MASTER.ONCEGATE_MASTER_KEY, credential: VALUE, echoAuthorization: true });
    ({ store, sealed, vault, target } = world);
    tool = setConfigTool(target.url);
    tools = new Map([[tool.name, tool]]);
    prepared = new PreparedCalls(sealed);
    const policy = new Policy([{ tools: ['*'], actors: ['*'], decision: 'allow', source: 'authorization.rules[0]' } as never]);
    authorization = new AuthorizationController(store, policy, vault, tools, sealed, 60_000, systemClock, prepared);
    dispatcher = httpDispatcher({ store, tools, sealed, http: world.http, vault, dispatcherId: 'dispatcher-http@test', clock: systemClock, prepared });
    rendering.renderHttpRequest.mockClear();
    vi.mocked(vaultCrypto.open).mockClear();
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await world.close();
  });

  /** Accepts one call, then runs it through authorization and the dispatcher as the event transport would. */
  async function call(args: Record<string, unknown>, between: () => unknown = () => undefined) {
    const executionId = await acceptHttpCall(world, tool, args);
    const eventOf = async (type: string) => (await store.readStream(executionStream(executionId))).find((event) => event.type === type)!;
    await authorization.onAccepted((await eventOf('ExecutionAccepted')) as never);
    await between();
    await dispatcher.onAuthorized(await eventOf('ExecutionAuthorized'));
    await dispatcher.drain();
    return { executionId, events: await store.readStream(executionStream(executionId)) };
  }

  function spies() {
    return {
      opens: vi.spyOn(sealed, 'open'),
      renders: rendering.renderHttpRequest,
      bindingChecks: vi.spyOn(vault, 'checkBinding'),
      decrypts: vi.mocked(vaultCrypto.open),
      // Catching up with the vault's journal (an incremental read from the last position); a refresh for which the
      // store tells at once that no vault event was committed since needs none.
      journalReads: vi.spyOn(vault as unknown as { readNew: (live: boolean) => Promise<void> }, 'readNew'),
    };
  }

  function counts(s: ReturnType<typeof spies>) {
    return { opens: s.opens.mock.calls.length, renders: s.renders.mock.calls.length, bindingChecks: s.bindingChecks.mock.calls.length, decrypts: s.decrypts.mock.calls.length, journalReads: s.journalReads.mock.calls.length };
  }

  it('given one call in one process, when it is authorized and sent, then its arguments are opened once, its request rendered once, the binding checked once and the credential decrypted once', async () => {
    const s = spies();
    const { events } = await call({ name: 'pool', value: 'on' });

    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
    expect(counts(s)).toEqual({ opens: 1, renders: 1, bindingChecks: 1, decrypts: 1, journalReads: 2 });
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]).toMatchObject({ path: '/config/pool', body: '{"value":"on"}', headers: { authorization: `Bearer ${VALUE}` } });
    // Settled: the prepared call is gone, and no event holds the credential (the echoed answer is sealed, redacted).
    expect(prepared.size).toBe(0);
    expect(JSON.stringify(events)).not.toContain(VALUE);
  });

  it('given the prepared calls forgotten between authorization and dispatch (a restart, another process), when sent, then everything is computed again and the same request goes out', async () => {
    const s = spies();
    const { executionId, events } = await call({ name: 'pool', value: 'off' }, () => prepared.clear());

    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]).toMatchObject({
      path: '/config/pool',
      body: '{"value":"off"}',
      headers: { authorization: `Bearer ${VALUE}`, 'idempotency-key': executionId },
    });
    // Authorization's preparation, then the dispatcher's own: one open and one rendering each; the dispatcher
    // checks the binding itself (preflight) and trusts that check at send while the vault is unchanged.
    expect(counts(s)).toEqual({ opens: 2, renders: 2, bindingChecks: 2, decrypts: 1, journalReads: 2 });
  });

  it('given one call, when it is sent, then the credential bytes it was decrypted into are zero-filled afterwards', async () => {
    const decrypted: Buffer[] = [];
    const original = vault.httpCredentialBuffer.bind(vault);
    vi.spyOn(vault, 'httpCredentialBuffer').mockImplementation(async (...args) => {
      const credential = await original(...args);
      decrypted.push(credential.value, ...credential.secrets);
      return credential;
    });
    await call({ name: 'pool', value: 'on' });

    expect(target.requests[0]!.headers['authorization']).toBe(`Bearer ${VALUE}`);
    expect(decrypted.length).toBeGreaterThan(1);
    for (const bytes of decrypted) expect(bytes.every((byte) => byte === 0)).toBe(true);
  });

  it('given the credential bound elsewhere after authorization, when dispatched, then the binding is checked again and nothing is sent', async () => {
    const context = world.vaultContext();
    const { events } = await call({ name: 'pool', value: 'on' }, () =>
      storeCredential(context, { ref: 'demo-writer', kind: 'bearer', bindings: ['elsewhere.example/config'] }, VALUE),
    );

    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'ExecutionDenied']);
    expect(events.at(-1)!.data).toMatchObject({ basis: 'credential_unresolved', reason: expect.stringContaining('elsewhere.example/config') });
    expect(target.requests).toHaveLength(0);
  });

  it('given more executions than the bound, when prepared, then the oldest are dropped', async () => {
    const small = new PreparedCalls(sealed, 2);
    const ids: ExecutionId[] = [];
    for (let i = 0; i < 3; i += 1) {
      const executionId = executionIdFromUlid(newUlid());
      const { ref } = await sealed.seal('arguments', executionId, Buffer.from(JSON.stringify({ name: `n${i}`, value: 'on' })));
      await small.get({ executionId, accepted: { argumentsRef: ref, toolName: tool.name } } as never, tool);
      ids.push(executionId);
    }
    expect(small.size).toBe(2);
  });

  it('given a prepared call, when its contract is replaced by another object or its arguments ref differs, then it is prepared again', async () => {
    const s = spies();
    const { executionId } = await call({ name: 'pool', value: 'on' });
    const state = { executionId, accepted: { argumentsRef: 'sealed_other', toolName: tool.name } } as never;
    expect(await prepared.get(state, tool)).toBeUndefined();
    const first = counts(s);
    const { state: real } = await loadExecution(store, executionId);
    const once = await prepared.get(real, tool);
    expect(await prepared.get(real, tool)).toBe(once);
    expect(await prepared.get(real, { ...tool })).not.toBe(once);
    expect(counts(s).opens - first.opens).toBe(2);
  });
});
